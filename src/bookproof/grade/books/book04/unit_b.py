"""Exercise Book 4, Unit B: the suite that catches the regression, a pass rate's spread, its tests.

Exercise 3 is data: the handed-in `suite.toml`, read by the grader and run by
the runtime against the chapter's tools and this module's own copy of the
planted regression (`stock_moving_tools`).
"""

from __future__ import annotations

import dataclasses
import random
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book04 import reading
from bookproof.grade.books.book04.baseline_and_unit_a import BOOK, S_UNIT_B
from bookproof.grade.books.book04.unit_a_tests import SURFACE, Replaced, reference_with
from bookproof.grade.questions import (
    Asks,
    call,
    expect,
    handed_in,
    same,
)
from sovereign_agent.evaluate import run_suite
from sovereign_agent.evaluate.run import VariantResult
from sovereign_agent.evaluate.suite import Suite, Variant
from sovereign_agent.evaluate.variants import Descriptions, variant_tools
from sovereign_agent.shop import DraftArguments
from sovereign_agent.tools import Dispatcher

__all__ = ["SUITE_TESTS", "stock_moving_tools"]

# --- exercise 3: the expectation that catches the regression ----------------------------

_SUITE_LIMITS = {"tasks": 10, "products": 20}
# Unit B's suite as the starter hands it out, written out again here: what
# "still there, none loosened" is measured against.
_STARTER_TASKS: Mapping[str, tuple[str, dict[str, int], dict[str, Any]]] = {
    "morning plan": (
        "Plan this morning's re-order.",
        {},
        {
            "stop_reason": "final_answer",
            "drafts": {fx.VANILLA: 6, fx.STRAWBERRY: 4},
            "total_pence": 2600,
        },
    ),
    "after a delivery": (
        "A delivery came in overnight. Plan this morning's re-order.",
        {fx.VANILLA: 9},
        {"stop_reason": "final_answer", "drafts": {fx.STRAWBERRY: 4}, "total_pence": 1100},
    ),
}


def stock_moving_tools(
    shop: dict[str, Any], prices: dict[str, int], *, descriptions: Descriptions, hints: bool
) -> Dispatcher:
    """The planted regression of Unit B, the grader's own copy: a draft also fills the freezer.

    A learner's `regressed.py` is theirs to edit, so their suite is run against
    this one (a suite's `factory` names it), never against that file.
    """
    tools = variant_tools(shop, prices, descriptions=descriptions, hints=hints)
    assert tools.setup is not None
    rows = {row["sku"]: row for row in tools.setup.arguments["shop"]["products"]}
    draft = tools.tools["draft_order"]

    def draft_and_fill(args: DraftArguments) -> Any:
        value = draft.handler(args)
        rows[args.sku]["on_hand"] += args.quantity
        return value

    changed = [
        dataclasses.replace(tool, handler=draft_and_fill) if tool is draft else tool
        for tool in tools.tools.values()
    ]
    return Dispatcher(changed, allowed=tools.allowed, hints=hints)


def _learner_suite() -> Asks[Suite | str]:
    """The suite.toml handed in, read by the grader and checked as the runtime checks a suite."""
    text = yield handed_in("suite.toml")
    if text is None:
        return "suite.toml is not UTF-8 text."
    if len(text) > reading.TEXT_LIMIT:
        return "suite.toml is larger than the grader reads (256 KB)."
    try:
        suite = Suite.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as error:
        # Only the line number of the parser's message: the rest may quote the file.
        line = re.search(r"at line (\d+)", str(error))
        where = f" (line {line.group(1)})" if line else ""
        return f"suite.toml is not valid TOML{where}."
    except RecursionError:
        return "suite.toml nests too deeply to be a suite."
    except ValidationError as error:
        location = error.errors(include_url=False, include_input=False)[0]["loc"]
        # Only a key the suite format defines is named: any other came from the file.
        part = location[0] if location and location[0] in Suite.model_fields else None
        where = f" (in its {part})" if part else ""
        return (
            f"suite.toml is not a suite the runtime can load{where}; run "
            "`uv run python -m sovereign_agent.evaluate suite.toml` to see what is wrong."
        )
    if (
        len(suite.tasks) > _SUITE_LIMITS["tasks"]
        or len(suite.shop.products) > _SUITE_LIMITS["products"]
    ):
        return (
            f"suite.toml holds more tasks or products than the grader runs "
            f"({_SUITE_LIMITS['tasks']} and {_SUITE_LIMITS['products']})."
        )
    return suite


_REGRESSION = f"{__name__}:stock_moving_tools"


def _graded_runs(rng: random.Random) -> Asks[tuple[VariantResult, VariantResult] | str]:
    """The handed-in suite's tasks, run against the chapter's tools and the planted regression."""
    suite = yield from _learner_suite()
    if isinstance(suite, str):
        return suite
    graded = suite.model_copy(
        update={
            "variants": [
                Variant(name="chapter tools"),
                Variant(name="draft moves stock", factory=_REGRESSION),
            ]
        }
    )
    try:
        chapter, regressed = run_suite(graded, repeat=rng.randint(2, 3), seed=rng.randrange(10**6))
    except Exception:
        # The suite is the learner's data, and the runtime's run of it must not
        # stop a class's grading, whatever in it the runtime did not foresee.
        return "The runtime could not run the tasks of your suite."
    return chapter, regressed


def _failed_names(result: VariantResult) -> str:
    names = sorted({name for run in result.runs for name in run.failed})
    return ", ".join(names)


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_B,
    asks="Your suite fails every run of the regressed tools, whose drafts put tubs in the freezer.",
    hint="The suite still passed against the regression Unit B describes, which changes the "
    "stock and not the drafts or their total.",
)
def ex3_regression_fails(rng: random.Random) -> Trial:
    results = yield from _graded_runs(rng)
    if isinstance(results, str):
        return results
    regressed = results[1]
    passed = sum(run.passed for run in regressed.runs)
    return expect(
        passed == 0,
        f"{passed} of {len(regressed.runs)} runs of the regressed tools passed your suite.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_B,
    asks="Your suite still passes every run of the chapter's tools.",
    hint="The suite failed against the chapter's correct tools: an expectation holds for the "
    "regression but not for them.",
    requires=ex3_regression_fails,
)
def ex3_chapter_tools_pass(rng: random.Random) -> Trial:
    results = yield from _graded_runs(rng)
    if isinstance(results, str):
        return results
    chapter = results[0]
    failed = sum(not run.passed for run in chapter.runs)
    return expect(
        failed == 0,
        f"{failed} of {len(chapter.runs)} runs of the chapter's tools failed your suite "
        f"(expectations broken: {_failed_names(chapter)}).",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_B,
    asks="Both tasks are still there, on the same shop, with every expectation they had.",
    hint="A task of the chapter's suite, or one of its expectations, was missing or changed.",
    requires=ex3_regression_fails,
)
def ex3_tasks_kept(rng: random.Random) -> Trial:
    suite = yield from _learner_suite()
    if isinstance(suite, str):
        return suite
    shop = suite.shop.model_dump()
    if not same({"products": fx.shop_rows(), "prices": fx.prices()}, shop):
        return "The suite's shop is not the starter's shop any more."
    tasks = {task.name: task for task in suite.tasks}
    for name, (text, stock, expectations) in _STARTER_TASKS.items():
        task = tasks.get(name)
        if task is None:
            return "A task of the starter's suite is missing."
        if task.text != text or task.stock != stock:
            return "A task's text or starting stock changed."
        kept = task.expect.model_dump(include=set(expectations))
        if not same(expectations, kept):
            return "An expectation of the starter's suite was removed or changed."
    return None


# --- exercise 4: how much does a pass rate move? ----------------------------------------


def _sloppy_suite(rng: random.Random) -> tuple[str, list[str]]:
    """A suite with planted slips and a few variants, as TOML text; and its variants' names."""
    kinds = [("full", "false"), ("names", "false"), ("full", "true"), ("shuffled", "true")]
    chosen = rng.sample(kinds, rng.randint(2, 3))
    names = [f"{descriptions} {fx.token(rng, 5)}" for descriptions, _ in chosen]
    variants = "".join(
        f'[[variants]]\nname = "{name}"\ndescriptions = "{descriptions}"\nhints = {hints}\n\n'
        for name, (descriptions, hints) in zip(names, chosen, strict=True)
    )
    text = (
        f'name = "spread {fx.token(rng, 6)}"\nmax_steps = 6\nmax_tool_calls = 10\n\n'
        "[shop]\nproducts = [\n"
        + "".join(
            f'    {{ sku = "{row["sku"]}", name = "{row["name"]}", on_hand = {row["on_hand"]}, '
            f"reorder_point = {row['reorder_point']} }},\n"
            for row in fx.shop_rows()
        )
        + "]\nprices = { "
        + ", ".join(f"{sku} = {unit}" for sku, unit in fx.prices().items())
        + " }\n\n[model]\n"
        + f"quantity_as_text = {rng.randint(20, 40) / 100}\n"
        + f"invented_tool = {rng.randint(10, 30) / 100}\n"
        + f"wrong_sku = {rng.randint(5, 20) / 100}\n\n"
        + variants
        + '[[tasks]]\nname = "morning plan"\ntext = "Plan this morning\'s re-order."\n'
        + '[tasks.expect]\nstop_reason = "final_answer"\n'
        + "drafts = { SKU-VANILLA = 6, SKU-STRAWBERRY = 4 }\n\n"
        + '[[tasks]]\nname = "after a delivery"\ntext = "A delivery came in."\n'
        + "stock = { SKU-VANILLA = 9 }\n[tasks.expect]\n"
        + "drafts = { SKU-STRAWBERRY = 4 }\n"
    )
    return text, names


def _spread_case(rng: random.Random) -> tuple[str, str, list[int], int, list[float]]:
    """A suite, one of its variants, seeds in an order sorting would change, repeats, the rates.

    The rates are the runtime's own run_suite, one seed at a time.
    """
    text, names = _sloppy_suite(rng)
    variant = rng.choice(names)
    suite = Suite.model_validate(tomllib.loads(text))
    alone = suite.model_copy(update={"variants": [v for v in suite.variants if v.name == variant]})
    repeat = rng.randint(2, 3)
    rates: dict[int, float] = {}
    seeds: list[int] = []
    for _ in range(12):
        seed = rng.randrange(10**6)
        rates[seed] = run_suite(alone, repeat=repeat, seed=seed)[0].pass_rate
        seeds.append(seed)
        in_order = [rates[s] for s in seeds]
        if len(seeds) >= 4 and in_order != [rates[s] for s in sorted(seeds)]:
            break
    return text, variant, seeds, repeat, [rates[seed] for seed in seeds]


@BOOK.exercise(
    4,
    points=2,
    section=S_UNIT_B,
    asks="One pass rate per seed, in the seeds' order, each that seed's share of passing runs.",
    hint="The pass rates were not one per seed, for the named variant only, in the order the "
    "seeds were given.",
)
def ex4_rates_per_seed(rng: random.Random) -> Trial:
    text, variant, seeds, repeat, wanted = _spread_case(rng)
    got = yield call("spread", text, variant, seeds, repeat)
    rates = got.get("rates") if isinstance(got, dict) else None
    if not isinstance(rates, list) or not all(reading.rate(rate) is not None for rate in rates):
        return "The spread did not come back as its rates, lowest and highest, as Unit B states."
    if len(rates) != len(wanted):
        return f"{len(seeds)} seeds should give {len(seeds)} rates; {len(rates)} came back."
    if all(reading.same_rate(w, r) for w, r in zip(wanted, rates, strict=True)):
        return None
    if sorted(map(float, rates)) == sorted(wanted):
        return "The rates are right, but not in the order the seeds were given."
    return "A rate is not the share of that seed's runs that passed (run the named variant only)."


@BOOK.exercise(
    4,
    points=1,
    section=S_UNIT_B,
    asks="lowest and highest are the smallest and largest rate; an unknown variant raises "
    "KeyError.",
    hint="The spread's range was not the lowest and highest rate, or a variant the suite does "
    "not have was measured anyway.",
)
def ex4_range_and_unknown(rng: random.Random) -> Trial:
    text, variant, seeds, repeat, wanted = _spread_case(rng)
    got = yield call("spread", text, variant, seeds, repeat)
    if not isinstance(got, dict):
        return "The spread did not come back as its rates, lowest and highest, as Unit B states."
    if not (
        reading.same_rate(min(wanted), got.get("lowest"))
        and reading.same_rate(max(wanted), got.get("highest"))
    ):
        return "lowest and highest should be the smallest and the largest of the rates."
    unknown = yield call("spread", text, "no variant " + fx.token(rng), seeds[:1], 1, raises=True)
    return expect(unknown.raised_a("KeyError"), "An unknown variant should raise KeyError.")


# --- Unit B's tests, graded by the faulty versions they catch ---------------------------

SUITE_TESTS = BOOK.learner_tests(
    exercise=4, file="test_book04_suite.py", section=S_UNIT_B, surface=SURFACE
)


@SUITE_TESTS.catches(points=1, behaviour="gives the rates in the order of the sorted seeds")
def tests_catch_seeds_sorted(reference: ModuleType, rng: random.Random) -> Replaced:
    right = reference.pass_rate_spread

    def pass_rate_spread(path: str, variant: str, seeds: Sequence[int], repeat: int) -> Any:
        return right(path, variant, sorted(seeds), repeat)

    return reference_with(reference, "pass_rate_spread", pass_rate_spread, ["spread"])


@SUITE_TESTS.catches(points=1, behaviour="measures the first variant when asked for an unknown one")
def tests_catch_unknown_variant(reference: ModuleType, rng: random.Random) -> Replaced:
    right = reference.pass_rate_spread

    def pass_rate_spread(path: str, variant: str, seeds: Sequence[int], repeat: int) -> Any:
        names = [known.name for known in reference.load_suite(Path(path)).variants]
        return right(path, variant if variant in names else names[0], seeds, repeat)

    return reference_with(reference, "pass_rate_spread", pass_rate_spread, ["spread"])
