"""Evaluation: planted slips give the numbers worked out by hand; one seed, one table."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from morning_plan import ROOT, SHOP, TASK, ask, turn
from provider_stub import OPENAI_ROUTE, ProviderStub, openai_text, openai_tool_calls

from sovereign_agent.evaluate import SuiteError, calls_of, load_suite, run_suite
from sovereign_agent.evaluate.__main__ import main as evaluate_main
from sovereign_agent.evaluate.metrics import (
    NO_FIT,
    UNREADABLE,
    Call,
    invalid_choices,
    recoveries,
    shaped_for,
)
from sovereign_agent.evaluate.sloppy import choose_tool
from sovereign_agent.evaluate.variants import described
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import build_tools
from sovereign_agent.trace import read_trace
from sovereign_agent.trace.replay import replay_run

SUITE = ROOT / "book/textbook/suites/morning_reorder.toml"
TOOLS = build_tools(SHOP).schemas()

SUITE_HEAD = """
name = "test"
max_steps = 6
max_tool_calls = 10

[shop]
products = [
    { sku = "SKU-VANILLA", name = "Vanilla", on_hand = 2, reorder_point = 8 },
    { sku = "SKU-CHOCOLATE", name = "Chocolate", on_hand = 7, reorder_point = 6 },
    { sku = "SKU-STRAWBERRY", name = "Strawberry", on_hand = 1, reorder_point = 5 },
]
prices = { SKU-VANILLA = 250, SKU-CHOCOLATE = 300, SKU-STRAWBERRY = 275 }
"""
MORNING_TASK = """
[[tasks]]
name = "morning plan"
text = "Plan this morning's re-order."
[tasks.expect]
stop_reason = "final_answer"
drafts = { SKU-VANILLA = 6, SKU-STRAWBERRY = 4 }
total_pence = 2600
on_hand = { SKU-VANILLA = 2 }
"""


def suite_file(tmp_path: Path, model: str, variant: str, task: str = MORNING_TASK) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(
        f'{SUITE_HEAD}\n[model]\n{model}\n\n[[variants]]\nname = "v"\n{variant}\n{task}',
        encoding="utf-8",
    )
    return path


def only_run(path: Path, seed: int = 0) -> Any:
    (result,) = run_suite(load_suite(path), repeat=1, seed=seed)
    return result


# -- the metrics, on a run scripted by hand ------------------------------------
def test_calls_record_what_was_asked_what_it_fits_and_how_it_was_answered() -> None:
    script = [
        turn(ask("c1", "check_freezer"), ask("c2", "draft_order", sku="SKU-VANILLA", quantity="6")),
        turn(ask("c3", "list_stock")),
        turn(
            ask("c4", "supplier", sku="SKU-VANILLA", quantity=6),
            AssistantToolCall(id="c5", name="draft_order", arguments_json='{"sku": '),
        ),
        turn(
            ask("c6", "draft_order", sku="SKU-VANILLA", quantity=6),
            ask("c7", "draft_order", sku="SKU-STRAWBERRY", quantity=4),
        ),
        AssistantMessage(content="done"),
    ]
    record = run_task(
        ScriptedModel(script), build_tools(SHOP), TASK, max_steps=6, max_tool_calls=10
    )
    calls = calls_of(record, TOOLS)
    assert calls == [
        Call("check_freezer", "list_stock", "tool_not_allowed"),
        Call("draft_order", "draft_order", "invalid_arguments"),
        Call("list_stock", "list_stock", "ok"),
        Call("supplier", "draft_order", "invalid_arguments"),
        Call("draft_order", UNREADABLE, "malformed_tool_call"),
        Call("draft_order", "draft_order", "ok"),
        Call("draft_order", "draft_order", "ok"),
    ]
    # By hand: four of seven calls refused for what the model wrote; all four
    # followed by a success written for the same tool (or, unreadable, any).
    assert invalid_choices(calls) == 4
    assert recoveries(calls) == (4, 4)


def test_a_mistake_never_corrected_is_not_a_recovery() -> None:
    calls = [
        Call("draft_order", "draft_order", "tool_failed"),
        Call("list_stock", "list_stock", "ok"),
        Call("run_shell", NO_FIT, "tool_not_allowed"),
        Call("supplier", "supplier", "ok"),
    ]
    # The failed draft is never followed by a draft that works; the shell call,
    # which fits nothing, is followed by a call that works.
    assert recoveries(calls) == (2, 1)
    assert invalid_choices(calls) == 1


def test_the_arguments_decide_which_tool_a_call_was_written_for() -> None:
    assert shaped_for("{}", "check_freezer", TOOLS) == "list_stock"
    assert shaped_for('{"sku": "SKU-VANILLA"}', "draft_order", TOOLS) == "supplier"
    assert shaped_for('{"sku": "x", "quantity": "6"}', "list_stock", TOOLS) == "draft_order"
    assert shaped_for('{"command": "ls"}', "run_shell", TOOLS) == NO_FIT
    assert shaped_for("[1]", "list_stock", TOOLS) == UNREADABLE


def test_a_reply_reusing_an_id_leaves_its_calls_refused() -> None:
    script = [turn(ask("c1", "list_stock")), turn(ask("c1", "list_stock"))]
    record = run_task(ScriptedModel(script), build_tools(SHOP), TASK, max_steps=4, max_tool_calls=4)
    assert [call.code for call in calls_of(record, TOOLS)] == ["ok", "duplicate_call_id"]


# -- the selector and the described tools ----------------------------------------
def test_the_selector_picks_by_shared_words_and_falls_back_in_name_order() -> None:
    full = build_tools(SHOP).tools.values()
    for descriptions, read, draft in (
        ("full", "list_stock", "draft_order"),
        ("names", "list_stock", "draft_order"),
        ("shuffled", "draft_order", "supplier"),
    ):
        schemas = [tool.schema() for tool in described(full, descriptions)]  # type: ignore[arg-type]
        assert choose_tool("read", schemas) == read
        assert choose_tool("draft", schemas) == draft
    schemas = [tool.schema() for tool in described(full, "shuffled")]
    assert choose_tool("read", schemas, frozenset({"draft_order"})) == "list_stock"
    assert (
        choose_tool("read", schemas, frozenset({"draft_order", "list_stock", "supplier"})) is None
    )


def test_shuffled_descriptions_each_land_on_the_wrong_tool() -> None:
    tools = build_tools(SHOP).tools
    moved = {tool.name: tool.description for tool in described(tools.values(), "shuffled")}
    assert all(moved[name] != tools[name].description for name in tools)
    assert sorted(moved.values()) == sorted(tool.description for tool in tools.values())


# -- whole runs of the stand-in, worked out by hand ---------------------------
def test_a_quantity_always_sent_as_text_with_hints_costs_one_step(tmp_path: Path) -> None:
    result = only_run(suite_file(tmp_path, "quantity_as_text = 1.0", "hints = true"))
    (run,) = result.runs
    # Read; two drafts refused with a hint on `quantity`; the same two drafts
    # with whole numbers; the answer. Four steps, five calls, two of them
    # invalid choices, both corrected.
    assert run.record.steps == 4
    assert [call.code for call in run.calls] == [
        "ok",
        "invalid_arguments",
        "invalid_arguments",
        "ok",
        "ok",
    ]
    assert run.passed
    assert (result.pass_rate, result.invalid_choice_rate, result.recovery_rate) == (1.0, 0.4, 1.0)


def test_the_same_slip_with_bare_codes_exhausts_the_budget(tmp_path: Path) -> None:
    result = only_run(suite_file(tmp_path, "quantity_as_text = 1.0", "hints = false"))
    (run,) = result.runs
    # Read; drafts refused; read again; drafts refused again, so draft_order
    # (which never worked) is given up; read again; the next best tool,
    # supplier, on the last step: refused with step_limit before it runs.
    assert [(call.asked, call.code) for call in run.calls] == [
        ("list_stock", "ok"),
        ("draft_order", "invalid_arguments"),
        ("draft_order", "invalid_arguments"),
        ("list_stock", "ok"),
        ("draft_order", "invalid_arguments"),
        ("draft_order", "invalid_arguments"),
        ("list_stock", "ok"),
        ("supplier", "step_limit"),
        ("supplier", "step_limit"),
    ]
    assert run.failed == ("stop_reason", "drafts", "total_pence")
    assert result.invalid_choice_rate == pytest.approx(4 / 9)
    assert result.recovery_rate == 0.0
    assert result.confusion[("draft_order", "supplier")] == 2


def test_shuffled_descriptions_with_hints_recover_in_two_extra_steps(tmp_path: Path) -> None:
    result = only_run(suite_file(tmp_path, "", 'descriptions = "shuffled"\nhints = true'))
    (run,) = result.runs
    assert [(call.fits, call.asked, call.code) for call in run.calls] == [
        ("list_stock", "draft_order", "invalid_arguments"),
        ("list_stock", "list_stock", "ok"),
        ("draft_order", "supplier", "invalid_arguments"),
        ("draft_order", "supplier", "invalid_arguments"),
        ("draft_order", "draft_order", "ok"),
        ("draft_order", "draft_order", "ok"),
    ]
    assert run.record.steps == 5 and run.passed
    assert (result.invalid_choice_rate, result.recovery_rate) == (0.5, 1.0)


def test_a_model_that_always_invents_a_tool_never_reads_the_stock(tmp_path: Path) -> None:
    result = only_run(suite_file(tmp_path, "invented_tool = 1.0", ""))
    (run,) = result.runs
    assert {call.asked for call in run.calls} == {"check_freezer"}
    assert [call.code for call in run.calls].count("tool_not_allowed") == 5
    assert run.record.stop_reason == "step_limit"
    assert result.recovery_rate == 0.0


def test_a_misspelled_sku_is_a_failed_tool_and_the_stand_in_reads_again(tmp_path: Path) -> None:
    suite = load_suite(suite_file(tmp_path, "wrong_sku = 0.5", ""))
    (result,) = run_suite(suite, repeat=20, seed=3)
    codes = {call.code for run in result.runs for call in run.calls}
    assert "tool_failed" in codes and "invalid_arguments" not in codes
    # A failed draft is followed by a read, then the draft again.
    for run in result.runs:
        for index, call in enumerate(run.calls[:-1]):
            if call.code == "tool_failed" and run.calls[index + 1].code != "step_limit":
                assert "list_stock" in {later.asked for later in run.calls[index + 1 :]}


# -- seeds ---------------------------------------------------------------------
def test_the_same_seed_gives_the_same_runs_and_another_seed_other_runs() -> None:
    suite = load_suite(SUITE)

    def signature(seed: int) -> list[Any]:
        return [
            [(run.task, run.record.steps, run.calls, run.failed) for run in result.runs]
            for result in run_suite(suite, repeat=5, seed=seed)
        ]

    assert signature(4) == signature(4)
    assert signature(4) != signature(5)


def test_variants_meet_the_same_slips_where_they_ask_the_same_questions() -> None:
    suite = load_suite(SUITE)
    full, names, *_ = run_suite(suite, repeat=10, seed=9)
    # Names alone choose as the full descriptions do here, so every run is identical.
    assert [run.calls for run in full.runs] == [run.calls for run in names.runs]


def test_the_stand_in_draws_slips_from_its_own_generator_only() -> None:
    suite = load_suite(SUITE)
    random.seed(1)
    first = run_suite(suite, repeat=3, seed=2)[0].runs
    random.seed(2)
    second = run_suite(suite, repeat=3, seed=2)[0].runs
    assert [run.calls for run in first] == [run.calls for run in second]


# -- the command line ---------------------------------------------------------
def evaluate(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {key: value for key, value in os.environ.items() if not key.startswith("SOVEREIGN")}
    return subprocess.run(
        [sys.executable, "-m", "sovereign_agent.evaluate", *argv],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def evaluate_here(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The command's `main` in this process, with the environment `evaluate` gives it.

    For the command's refusals and help, which are its `main`'s to decide: the
    tests above run it as a process, as a reader does.
    """
    for key in [key for key in os.environ if key.startswith("SOVEREIGN")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(ROOT)

    def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        with monkeypatch.context() as scoped:
            for key, value in (env or {}).items():
                scoped.setenv(key, value)
            capsys.readouterr()  # only what this command prints
            try:
                status = evaluate_main(list(argv))
            except SystemExit as exit:  # argparse's --help and usage errors
                status = exit.code
            printed = capsys.readouterr()
        return subprocess.CompletedProcess(list(argv), status, printed.out, printed.err)

    return run


def test_the_chapter_suite_prints_the_same_table_for_the_same_seed(tmp_path: Path) -> None:
    first = evaluate(str(SUITE), "--repeat", "5", "--seed", "4", "--json", str(tmp_path / "a.json"))
    second = evaluate(str(SUITE), "--repeat", "5", "--seed", "4", "--quiet")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert second.stderr == ""
    assert "[5/5] shuffled + hints / after a delivery:" in first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "suite: Lucy's morning re-order (morning_reorder.toml)"
    assert lines[4].split() == [
        "variant",
        "runs",
        "pass",
        "rate",
        "steps",
        "tool",
        "calls",
        "invalid",
        "choices",
        "recovery",
    ]
    document = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert [v["variant"] for v in document["variants"]] == [
        "full descriptions",
        "names only",
        "shuffled",
        "full + hints",
        "shuffled + hints",
    ]
    assert document["seed"] == 4 and document["repeat"] == 5
    assert all(v["runs"] == 10 for v in document["variants"])
    # Every rate printed carries its interval, and the JSON holds the same.
    for line, variant in zip(lines[5:10], document["variants"], strict=True):
        low, high = variant["pass_rate_interval"]
        shown = f"{100 * variant['pass_rate']:.1f}% ({100 * low:.1f}-{100 * high:.1f})"
        assert shown in line
        assert line.count("%") == 3
    assert lines[10].startswith("(in parentheses: each rate's 95% interval, Wilson's")
    assert document["interval"] == "Wilson score, 95%"


def test_variant_runs_only_the_named_variants_and_their_rows_are_unchanged() -> None:
    whole = evaluate(str(SUITE), "--repeat", "3", "--seed", "4", "--quiet")
    part = evaluate(
        str(SUITE),
        "--repeat",
        "3",
        "--seed",
        "4",
        "--quiet",
        # Named out of the suite's order: the report keeps the suite's.
        "--variant",
        "shuffled",
        "--variant",
        "full descriptions",
    )
    assert whole.returncode == 0 and part.returncode == 0, part.stderr

    def row(output: str, name: str) -> str:
        return next(line for line in output.splitlines() if line.startswith(name + " "))

    names = [line.split("  ")[0] for line in part.stdout.splitlines()[5:7]]
    assert names == ["full descriptions", "shuffled"]
    assert "names only" not in part.stdout and "hints" not in part.stdout
    # No run is seeded by its variant, so a variant alone prints the row it
    # prints beside the others, and the same confusion table.
    for name in ("full descriptions", "shuffled"):
        assert row(part.stdout, name) == row(whole.stdout, name)
    for name in ("full descriptions", "shuffled"):
        assert confusion_of(part.stdout, name) == confusion_of(whole.stdout, name)
        assert confusion_of(part.stdout, name)


def confusion_of(output: str, name: str) -> list[str]:
    """A variant's tool confusion table: its name's line and the indented lines under it."""
    lines = output.split("tool confusion")[1].splitlines()
    start = lines.index(name) + 1
    table = []
    for line in lines[start:]:
        if not line.startswith(" "):
            break
        table.append(line)
    return table


def test_an_unknown_variant_is_one_line_naming_the_suites_variants(
    evaluate_here: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    result = evaluate_here(str(SUITE), "--repeat", "1", "--variant", "names", "--quiet")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "error: the suite has no variant 'names'; its variants are 'full descriptions', "
        "'names only', 'shuffled', 'full + hints', 'shuffled + hints'\n"
    )


def test_the_json_holds_one_record_per_run_pointing_into_the_trace(tmp_path: Path) -> None:
    trace, report = tmp_path / "t.jsonl", tmp_path / "r.json"
    result = evaluate(
        str(SUITE),
        "--repeat",
        "2",
        "--seed",
        "4",
        "--quiet",
        "--json",
        str(report),
        env={"SOVEREIGN_TRACE": str(trace)},
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(report.read_text(encoding="utf-8"))
    records = document["runs"]
    # Five variants, two tasks, two repeats: twenty runs, each once.
    assert len(records) == 20
    assert {(r["variant"], r["task"], r["repeat"]) for r in records} == {
        (v["variant"], task, repeat)
        for v in document["variants"]
        for task in ("morning plan", "after a delivery")
        for repeat in (0, 1)
    }
    assert records[0]["seed"] == "4/morning plan/0"
    for variant in document["variants"]:
        mine = [r for r in records if r["variant"] == variant["variant"]]
        assert sum(r["passed"] for r in mine) == variant["passed"]
        assert all(r["passed"] == (r["expectations_broken"] == []) for r in mine)
    # Each record names its run in the trace, and the lines it names are that run's.
    recorded = {run.run_id: run for run in read_trace(trace)}
    lines = trace.read_text(encoding="utf-8").splitlines()
    for record in records:
        assert record["trace"]["file"] == str(trace)
        run = recorded[record["trace"]["run"]]
        first, last = record["trace"]["lines"]
        assert (first, last) == (run.lines[0], run.lines[-1])
        assert json.loads(lines[first - 1])["event"] == "run_started"
        finished = json.loads(lines[last - 1])
        assert finished["event"] == "run_finished"
        assert finished["stop_reason"] == record["stop_reason"]
        assert finished["steps"] == record["steps"]
    shuffled = [r for r in records if r["variant"] == "shuffled"]
    assert all(
        set(r["expectations_broken"]) == {"drafts", "stop_reason", "total_pence"} for r in shuffled
    )


def test_without_a_trace_the_records_point_nowhere(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = evaluate(str(SUITE), "--repeat", "1", "--quiet", "--json", str(report))
    assert result.returncode == 0, result.stderr
    records = json.loads(report.read_text(encoding="utf-8"))["runs"]
    assert len(records) == 10 and all(r["trace"] is None for r in records)


def test_a_run_of_the_suite_under_the_trace_variable_replays(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    result = evaluate(str(SUITE), "--repeat", "1", "--quiet", env={"SOVEREIGN_TRACE": str(trace)})
    assert result.returncode == 0, result.stderr
    runs = read_trace(trace)
    assert len(runs) == 10
    assert {run.started.setup.factory for run in runs} == {  # type: ignore[union-attr]
        "sovereign_agent.evaluate.variants:variant_tools"
    }
    assert all(replay_run(run).divergence is None for run in runs)


def test_the_same_suite_runs_against_a_real_model_when_one_is_configured(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "quantity_as_text = 1.0", "")
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("a", "list_stock", "{}")]),
            openai_tool_calls(
                [
                    ("b", "draft_order", json.dumps({"sku": "SKU-VANILLA", "quantity": 6})),
                    ("c", "draft_order", json.dumps({"sku": "SKU-STRAWBERRY", "quantity": 4})),
                ]
            ),
            openai_text("Two drafts, 2,600 pence."),
        )
        result = evaluate(
            str(suite),
            "--repeat",
            "1",
            env={
                "SOVEREIGN_MODEL": "openai:stub-model",
                "OPENAI_API_KEY": "secret-token-eval-1234",
                "OPENAI_BASE_URL": stub.openai_base_url,
            },
        )
        asked = len(stub.requests_to(OPENAI_ROUTE))
    assert result.returncode == 0, result.stderr
    assert asked == 3
    assert "model: openai:stub-model at http://127.0.0.1" in result.stdout
    assert "the planted slips and the seed play no part" in result.stdout
    # The real model sent whole numbers: the suite's slips did not apply.
    assert "100.0%" in result.stdout.splitlines()[5]
    assert "secret-token" not in result.stdout + result.stderr


def test_an_unknown_provider_is_a_usage_error(
    evaluate_here: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    result = evaluate_here(str(SUITE), env={"SOVEREIGN_MODEL": "parrot:polly"})
    assert result.returncode == 2
    assert "SOVEREIGN_MODEL='parrot:polly' is not one of" in result.stderr


def test_help_explains_the_stand_in_and_every_column(
    evaluate_here: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    result = evaluate_here("--help")
    assert result.returncode == 0
    for phrase in ("--repeat N", "--seed S", "--json FILE", "smoke test", "invalid choices"):
        assert phrase in result.stdout


# -- suites that cannot be used --------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "x"\nmax_steps = ', "not valid TOML"),
        (
            SUITE_HEAD
            + '[[variants]]\nname = "v"\n'
            + MORNING_TASK.replace("total_pence", "total_pennies"),
            "tasks[0].expect.total_pennies: Extra inputs are not permitted",
        ),
        (
            SUITE_HEAD + '[[variants]]\nname = "v"\ndescriptions = "poetic"\n' + MORNING_TASK,
            "variants[0].descriptions: Input should be 'full', 'names' or 'shuffled'",
        ),
        (
            SUITE_HEAD + '[model]\nwrong_sku = 1.5\n[[variants]]\nname = "v"\n' + MORNING_TASK,
            "model.wrong_sku: Input should be less than or equal to 1",
        ),
        (
            SUITE_HEAD
            + '[[variants]]\nname = "v"\n'
            + MORNING_TASK.replace("SKU-VANILLA = 6", "SKU-MANGO = 6"),
            "task 'morning plan': expect.drafts names an unknown sku SKU-MANGO",
        ),
        (
            SUITE_HEAD + '[[variants]]\nname = "v"\n[[variants]]\nname = "v"\n' + MORNING_TASK,
            "two variants share a name",
        ),
        (
            SUITE_HEAD
            + '[[variants]]\nname = "v"\n[[tasks]]\nname = "t"\ntext = "x"\n[tasks.expect]\n',
            "checks nothing",
        ),
        (SUITE_HEAD + MORNING_TASK, "variants: Field required"),
        (
            SUITE_HEAD.replace("max_steps = 6", 'max_steps = "6"')
            + '[[variants]]\nname = "v"\n'
            + MORNING_TASK,
            "max_steps: Input should be a valid integer",
        ),
    ],
)
def test_a_suite_mistake_names_the_file_and_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_the_command_reports_a_broken_suite_and_exits_2(
    tmp_path: Path, evaluate_here: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("name = 1\n", encoding="utf-8")
    result = evaluate_here(str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {path}: ")
    assert evaluate_here(str(tmp_path / "missing.toml")).returncode == 2
    assert evaluate_here(str(SUITE), "--repeat", "0").returncode == 2


REGRESSED = '''
from sovereign_agent.evaluate.variants import variant_tools
from sovereign_agent.shop import DraftArguments
from sovereign_agent.tools import Dispatcher, ExecutableTool


def stock_moving_tools(shop, prices, *, descriptions, hints):
    """The chapter's tools, except that a draft also puts its tubs in the freezer."""
    tools = variant_tools(shop, prices, descriptions=descriptions, hints=hints)
    rows = {row["sku"]: row for row in tools.setup.arguments["shop"]["products"]}
    draft = tools.tools["draft_order"]

    def drafting(args):
        value = draft.handler(args)
        rows[args.sku]["on_hand"] += args.quantity
        return value

    changed = [
        ExecutableTool(t.name, t.description, t.arguments, drafting)
        if t.name == "draft_order"
        else t
        for t in tools.tools.values()
    ]
    return Dispatcher(changed, allowed=tools.allowed, hints=hints)
'''


def test_a_variant_may_name_the_code_that_builds_its_tools_beside_the_suite(
    tmp_path: Path,
) -> None:
    (tmp_path / "regressed.py").write_text(REGRESSED, encoding="utf-8")
    variants = (
        '[[variants]]\nname = "chapter"\n\n'
        '[[variants]]\nname = "stock moves"\nfactory = "regressed.py:stock_moving_tools"\n'
    )
    path = tmp_path / "suite.toml"
    path.write_text(SUITE_HEAD + variants + MORNING_TASK, encoding="utf-8")
    suite = load_suite(path)
    assert suite.variants[1].factory == f"{tmp_path}/regressed.py:stock_moving_tools"
    chapter, moved = run_suite(suite, repeat=2, seed=0)
    # The drafts and their total are right either way; only the freezer tells.
    assert chapter.pass_rate == 1.0
    assert moved.pass_rate == 0.0
    assert {name for run in moved.runs for name in run.failed} == {"on_hand"}


def test_a_trace_that_cannot_be_read_back_costs_only_the_line_numbers(tmp_path: Path) -> None:
    trace, report = tmp_path / "t.jsonl", tmp_path / "r.json"
    # Someone else's broken line already in the file: the runs append after it.
    trace.write_text("not an event\n", encoding="utf-8")
    result = evaluate(
        str(SUITE),
        "--repeat",
        "1",
        "--quiet",
        "--json",
        str(report),
        env={"SOVEREIGN_TRACE": str(trace)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("warning: the runs' lines in the trace are left out: ")
    assert "line 1: not a complete JSON object" in result.stderr
    records = json.loads(report.read_text(encoding="utf-8"))["runs"]
    assert all(r["trace"]["lines"] is None for r in records)
    ids = {r["trace"]["run"] for r in records}
    assert len(ids) == 10
    assert all(run_id in trace.read_text(encoding="utf-8") for run_id in ids)
