"""Exercise Book 4, Unit A's tests: graded by the faulty versions of the reference they catch.

`SURFACE` is what a learner's tests may touch of `evidence.py`; Unit B's tests
are graded through the same surface (`unit_b`).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import Field

from bookproof.grade.book import JSON, ObjectKind, Surface
from bookproof.grade.books.book04 import reading
from bookproof.grade.books.book04.baseline_and_unit_a import BOOK, S_UNIT_A
from sovereign_agent.shop import DraftArguments

__all__ = ["SURFACE", "TRACE_TESTS", "Replaced", "reference_with"]

# --- Unit A's tests, graded by the faulty versions they catch ---------------------------

SURFACE = Surface(
    functions={
        "record_run": JSON,
        "failures_in": JSON,
        "replay_at_290": JSON,
        "strawberry_at_290": "Dispatcher",
        "ToolCall": "ToolCall",
        "spread": JSON,
    },
    objects={
        "Dispatcher": ObjectKind(methods={"schemas": JSON, "invoke": JSON}),
        "ToolCall": ObjectKind(fields=("id", "name", "arguments")),
    },
    constants=("TASK", "MORNING_SHOP", "MORNING_PLAN", "PRICES_PENCE"),
)

TRACE_TESTS = BOOK.learner_tests(
    exercise=2, file="test_book04_traces.py", section=S_UNIT_A, surface=SURFACE
)

Replaced = Mapping[str, Callable[..., Any]]


def reference_with(reference: ModuleType, name: str, faulty: Any, doors: Sequence[str]) -> Replaced:
    """The reference with one of the learner's functions wrong, as the doors that call it see it.

    Each run's server is a fork of its own, so the change reaches no other run.
    """
    setattr(reference, name, faulty)
    return {door: getattr(reference, door) for door in doors}


@TRACE_TESTS.catches(points=1, behaviour="counts a write its authority refused as a failed handler")
def tests_catch_authority_counted(reference: ModuleType, rng: random.Random) -> Replaced:
    def handler_failures(trace_path: str) -> list[dict[str, Any]]:
        lines = Path(trace_path).read_text(encoding="utf-8").splitlines()
        return reading.failed_handlers(lines, ("handler", "result", "before_write"))

    return reference_with(reference, "handler_failures", handler_failures, ["failures_in"])


@TRACE_TESTS.catches(points=1, behaviour="lists the failures run by run, not in the file's order")
def tests_catch_run_order(reference: ModuleType, rng: random.Random) -> Replaced:
    right = reference.handler_failures

    def handler_failures(trace_path: str) -> list[dict[str, Any]]:
        order = [run.run_id for run in reference.read_trace(Path(trace_path))]
        found = right(trace_path)
        return sorted(found, key=lambda failure: (order.index(failure["run"]), failure["line"]))

    return reference_with(reference, "handler_failures", handler_failures, ["failures_in"])


class _AtMost999(DraftArguments):
    quantity: int = Field(gt=0, le=999)


@TRACE_TESTS.catches(points=1, behaviour="sets strawberry at 290 and also changes a schema")
def tests_catch_schema_changed(reference: ModuleType, rng: random.Random) -> Replaced:
    right = reference.strawberry_at_290

    def strawberry_at_290(**recorded: Any) -> Any:
        tools = right(**recorded)
        changed = [
            dataclasses.replace(tool, arguments=_AtMost999) if tool.name == "draft_order" else tool
            for tool in tools.tools.values()
        ]
        return reference.Dispatcher(changed, allowed=tools.allowed, hints=tools.hints)

    return reference_with(
        reference, "strawberry_at_290", strawberry_at_290, ["strawberry_at_290", "replay_at_290"]
    )
