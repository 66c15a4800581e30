"""The records a book module hands the grader, and the steps it asks the harness to run.

A book module never touches a submission. It describes *trials*: a short list
of steps (plain JSON, sent to the harness in the child process) and a judge
that turns the harness's raw observations into a verdict. The judge runs in the
grading process, on values the grader decoded and validated itself, against
expected values the book module computed itself: the submission's only say is
what its functions returned.

Step builders (`call`, `method`, `let`, ...) and argument markers (`ref`,
`tup`, `probe`, `tool_call`) are the whole vocabulary the harness understands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OUTCOMES",
    "Check",
    "Outcome",
    "Result",
    "Step",
    "Trial",
    "attrs",
    "call",
    "get",
    "let",
    "method",
    "probe",
    "probe_count",
    "ref",
    "same",
    "set_item",
    "tool_call",
    "tup",
]

Outcome = Literal["passed", "failed", "error", "timeout", "out of memory", "crashed"]
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "error", "timeout", "out of memory", "crashed")


@dataclass(frozen=True)
class Check:
    """One graded behaviour: a stable id (a gradebook column), its points and its feedback.

    `passed` is said when the behaviour holds; `hint` says what to fix, and
    `section` names the place in the chapter to re-read (by its heading), so
    every failed line ends with a pointer back into the book.
    """

    id: str
    points: int
    exercise: str
    passed: str
    hint: str
    section: str


@dataclass(frozen=True)
class Step:
    """One operation for the harness.

    `may_raise` says the judge wants to see an exception here (a constructor
    that must refuse a duplicate); anywhere else an exception means the check
    could not be completed, and its outcome is "error".
    """

    op: dict[str, Any]
    may_raise: bool = False


@dataclass(frozen=True)
class Result:
    """What the harness observed for one step, after the grader re-validated it.

    `status` is "returned" (with `value`, plain JSON of exact builtin types),
    "saved" (the value was kept in the child under a name, not sent),
    "raised" (with `raised`: which of a fixed list of builtin exception classes
    the exception is an instance of; never its text), or "wrong_type" (the
    value held something other than exact builtin types: a subclass, an object
    claiming to equal everything, a cycle, or something too large).
    """

    status: Literal["returned", "saved", "raised", "wrong_type"]
    value: Any = None
    raised: frozenset[str] = field(default_factory=frozenset)


# A judge returns None when the behaviour holds, or a learner-facing reason.
# The reason is written by the book module; it may quote numbers the judge
# chose to show, never a string taken from the submission.
Judge = Callable[[Sequence[Result]], "str | None"]


@dataclass(frozen=True)
class Trial:
    """The steps that exercise one check, and the judge that decides it."""

    steps: tuple[Step, ...]
    judge: Judge


def same(expected: Any, observed: Any) -> bool:
    """Equality that also compares types, so `True` never passes for `1` nor `1.0` for `1`."""
    if type(expected) is not type(observed):
        return False
    if isinstance(expected, dict):
        return expected.keys() == observed.keys() and all(
            same(value, observed[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return len(expected) == len(observed) and all(
            same(a, b) for a, b in zip(expected, observed, strict=True)
        )
    return bool(expected == observed)


# --- argument markers: JSON the harness turns into live objects ------------


def ref(name: str) -> dict[str, Any]:
    """An object an earlier step saved under `name`."""
    return {"$ref": name}


def tup(*items: Any) -> dict[str, Any]:
    """A tuple (JSON has none), for arguments such as `extra_tools=(...)`."""
    return {"$tuple": list(items)}


def probe(name: str, value: str) -> dict[str, Any]:
    """A harmless tool the grader registers: its handler returns `value` and counts its runs.

    Built from the submission's own `ExecutableTool` when it defines one, else
    from `sovereign_agent.tools.ExecutableTool`.
    """
    return {"$probe": {"name": name, "value": value}}


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A hand-made request, built with the submission's `ToolCall` if it defines one."""
    return {"$call": {"id": call_id, "name": name, "arguments": arguments}}


# --- steps -----------------------------------------------------------------


def call(
    fn: str, *args: Any, save: str | None = None, may_raise: bool = False, **kwargs: Any
) -> Step:
    """Call the submission module's top-level function `fn`."""
    return Step(
        {"op": "call", "fn": fn, "args": list(args), "kwargs": kwargs, "save": save}, may_raise
    )


def method(
    obj: str, name: str, *args: Any, save: str | None = None, may_raise: bool = False
) -> Step:
    """Call method `name` of a saved object."""
    return Step(
        {"op": "method", "obj": obj, "name": name, "args": list(args), "save": save}, may_raise
    )


def let(name: str, value: Any) -> Step:
    """Keep a JSON value in the child under `name`, to pass it by reference and look at it later."""
    return Step({"op": "let", "save": name, "value": value})


def get(name: str) -> Step:
    """Send back a saved object (to see, say, whether a function changed its argument)."""
    return Step({"op": "get", "obj": name})


def set_item(name: str, path: Sequence[str | int], value: Any) -> Step:
    """Change one item inside a saved object, as a caller changing its own data would."""
    return Step({"op": "set", "obj": name, "path": list(path), "value": value})


def probe_count(name: str) -> Step:
    """How many times the probe tool called `name` has run its handler."""
    return Step({"op": "probe_count", "name": name})


def attrs(*names: str) -> Step:
    """Which of these top-level names the submission module defines as callables."""
    return Step({"op": "attrs", "names": list(names)})
