"""Support the book does not print: every variant, task and repeat of a suite, run and measured.

Runs are independent: each gets its own copy of the shop, its own model, and
(offline) its own random generator, seeded from the suite's seed, the task
and the repeat. Not from the variant: the variants of one comparison meet the
same planted slips wherever they ask the same questions, so a difference
between them is the variant's, not the dice's.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sovereign_agent.evaluate.interval import Rate
from sovereign_agent.evaluate.metrics import (
    Call,
    calls_of,
    drafts_in,
    invalid_choices,
    recoveries,
)
from sovereign_agent.evaluate.sloppy import SloppyModel
from sovereign_agent.evaluate.suite import DEFAULT_FACTORY, Expectations, Suite, Task, Variant
from sovereign_agent.evaluate.variants import variant_tools
from sovereign_agent.limits import RunLimits
from sovereign_agent.loop import RunRecord, run_task
from sovereign_agent.models import ModelClient
from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import Dispatcher
from sovereign_agent.trace.recorder import recorder_from_env
from sovereign_agent.trace.replay import load_factory

__all__ = ["ModelFactory", "Progress", "RunResult", "VariantResult", "run_suite"]

ModelFactory = Callable[[random.Random], ModelClient]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunResult:
    """One run of one task under one variant: the record, what failed, what it measured."""

    task: str
    repeat: int
    record: RunRecord
    failed: tuple[str, ...]
    calls: tuple[Call, ...]
    final_stock: tuple[Mapping[str, Any], ...]
    # What the run's dice were seeded with (offline), or None for a real model.
    seed: str | None = None
    # The run's id in the trace SOVEREIGN_TRACE names, or None when not traced.
    trace_run: str | None = None

    @property
    def passed(self) -> bool:
        return not self.failed


@dataclass
class VariantResult:
    """Every run of one variant, and the variant's figures over them."""

    variant: Variant
    runs: list[RunResult] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        return sum(run.passed for run in self.runs) / len(self.runs)

    @property
    def mean_steps(self) -> float:
        return sum(run.record.steps for run in self.runs) / len(self.runs)

    @property
    def mean_calls(self) -> float:
        return sum(len(run.calls) for run in self.runs) / len(self.runs)

    @property
    def invalid_choice_rate(self) -> float | None:
        calls = sum(len(run.calls) for run in self.runs)
        return None if calls == 0 else sum(invalid_choices(r.calls) for r in self.runs) / calls

    @property
    def recovery_rate(self) -> float | None:
        counted = [recoveries(run.calls) for run in self.runs]
        mistakes = sum(made for made, _ in counted)
        return None if mistakes == 0 else sum(fixed for _, fixed in counted) / mistakes

    @property
    def passes(self) -> Rate:
        """Runs whose every expectation held, of all runs."""
        return Rate(sum(run.passed for run in self.runs), len(self.runs))

    @property
    def invalid(self) -> Rate:
        """Calls refused for what the model chose, of all calls."""
        return Rate(
            sum(invalid_choices(run.calls) for run in self.runs),
            sum(len(run.calls) for run in self.runs),
        )

    @property
    def recovered(self) -> Rate:
        """Mistakes followed by a corrected call, of all mistakes."""
        counted = [recoveries(run.calls) for run in self.runs]
        return Rate(sum(fixed for _, fixed in counted), sum(made for made, _ in counted))

    @property
    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter((call.fits, call.asked) for run in self.runs for call in run.calls)

    @property
    def failures(self) -> Counter[tuple[str, str]]:
        return Counter((run.task, name) for run in self.runs for name in run.failed)


def check_expectations(
    expect: Expectations, record: RunRecord, final_stock: Sequence[Mapping[str, Any]]
) -> tuple[str, ...]:
    """The names of the expectations a run broke, in the order the suite declares them."""
    drafts = drafts_in(record)
    drafted: Counter[str] = Counter()
    for draft in drafts:
        drafted[draft["sku"]] += draft["quantity"]
    on_hand = {row["sku"]: row["on_hand"] for row in final_stock}
    checks: dict[str, Callable[[Any], bool]] = {
        "stop_reason": lambda wanted: record.stop_reason == wanted,
        "drafts": lambda wanted: dict(drafted) == wanted,
        "total_pence": lambda wanted: sum(d["total_pence"] for d in drafts) == wanted,
        "on_hand": lambda wanted: all(on_hand.get(sku) == n for sku, n in wanted.items()),
        "steps_at_most": lambda wanted: record.steps <= wanted,
        "never_executed": lambda wanted: not set(wanted) & set(record.executed),
    }
    failed = []
    for name, check in checks.items():
        wanted = getattr(expect, name)
        if wanted is not None and not check(wanted):
            failed.append(name)
    return tuple(failed)


def _scripted_models(suite: Suite) -> ModelFactory:
    """The offline stand-in with the suite's slips, one per run."""
    return lambda rng: SloppyModel(rng, suite.model)


def _task_tools(suite: Suite, task: Task, variant: Variant) -> Dispatcher:
    products = [
        {**product.model_dump(), "on_hand": task.stock.get(product.sku, product.on_hand)}
        for product in suite.shop.products
    ]
    factory = variant_tools if variant.factory == DEFAULT_FACTORY else load_factory(variant.factory)
    return factory(
        {"products": products},
        dict(suite.shop.prices),
        descriptions=variant.descriptions,
        hints=variant.hints,
    )


def _one_run(
    suite: Suite, task: Task, variant: Variant, repeat: int, model: ModelClient, seed: str | None
) -> RunResult:
    tools = _task_tools(suite, task, variant)
    offered = tools.schemas()
    # The recorder run_task would make itself (SOVEREIGN_TRACE, or none), held
    # here so that the result can name the run's id in the trace.
    recorder = recorder_from_env()
    if suite.limits is None:
        record = run_task(
            model,
            tools,
            task.text,
            max_steps=suite.max_steps,
            max_tool_calls=suite.max_tool_calls,
            system=suite.system,
            recorder=recorder,
        )
    else:
        # Each run its own limits: its own deadline, buckets and spending.
        with RunLimits(suite.limits) as limited:
            record = run_task(
                limited.model(model),
                limited.dispatcher(tools),
                task.text,
                max_steps=suite.max_steps,
                max_tool_calls=suite.max_tool_calls,
                system=suite.system,
                recorder=recorder,
            )
    # The operator reads the final stock through the shop's own report, past
    # the allowlist: a variant may hide list_stock from the model, never from us.
    final_stock = tools.tools["list_stock"].handler(NoArguments())
    return RunResult(
        task=task.name,
        repeat=repeat,
        record=record,
        failed=check_expectations(task.expect, record, final_stock),
        calls=tuple(calls_of(record, offered)),
        final_stock=tuple(final_stock),
        seed=seed,
        trace_run=recorder.run_id if recorder.enabled else None,
    )


def run_suite(
    suite: Suite,
    *,
    repeat: int,
    seed: int,
    models: ModelFactory | None = None,
    progress: Progress | None = None,
) -> list[VariantResult]:
    """Run every task of every variant `repeat` times; the same seed gives the same runs."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    make_model = _scripted_models(suite) if models is None else models
    results = []
    for number, variant in enumerate(suite.variants, start=1):
        result = VariantResult(variant)
        for task in suite.tasks:
            for index in range(repeat):
                # A string seed is hashed the same way in every process and
                # every Python version that this project supports.
                dice = f"{seed}/{task.name}/{index}"
                model = make_model(random.Random(dice))
                result.runs.append(
                    _one_run(suite, task, variant, index, model, dice if models is None else None)
                )
            if progress is not None:
                passed = sum(run.passed for run in result.runs if run.task == task.name)
                progress(
                    f"[{number}/{len(suite.variants)}] {variant.name} / {task.name}: "
                    f"{passed} of {repeat} passed"
                )
        results.append(result)
    return results
