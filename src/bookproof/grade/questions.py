"""The questions a check may ask a submission, and the answers it gets back.

A check never touches a submission. It is a generator that yields one
`Question` at a time; the grader sends it to the child process that holds
the submission, reads back a plain value under strict size and shape limits,
and sends that value into the generator. The child never sees more than the
question in front of it: no plan of the questions to come, and no expected
answer (those stay in the generator, in the grading process).

Builders (`call`, `method`, `let`, `get`, `set_item`, `attrs`, `probe_count`,
`stub`) make questions; markers (`tup`, `probe`, `tool_call`, `scratch_path`)
stand for live objects the child builds from plain JSON; `Ref` names an object the child
keeps between questions of one check.

Two requests never reach the child. `folder(tree)`: a check yields it
before its first question, and the grader makes the folder on its own side
and answers with the path where the submission's sandbox shows it (`files`).
`handed_in(name)`: the text of a data file the learner handed in, which the
grader reads from its own copy of the folder.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar

from bookproof.grade.files import Tree

__all__ = [
    "Answer",
    "Asks",
    "Folder",
    "Question",
    "Ref",
    "attrs",
    "call",
    "expect",
    "folder",
    "get",
    "handed_in",
    "let",
    "method",
    "probe",
    "probe_count",
    "same",
    "scratch_path",
    "set_item",
    "stub",
    "tool_call",
    "tup",
]


T = TypeVar("T")
# A generator that asks questions and ends with a T: a check's trial ends
# with its verdict; a helper (build a dispatcher, read two messages) with what
# it made, used in a trial with `yield from`.
Asks: TypeAlias = Generator["Question | Folder", Any, T]


@dataclass(frozen=True)
class Ref:
    """An object the child keeps for the rest of one check (a dispatcher, a saved dict).

    The grader names it; the child only ever sees the name. Pass a `Ref` as
    an argument (or inside one) and the child substitutes the live object.
    """

    name: str


@dataclass(frozen=True)
class Question:
    """One operation for the child.

    `keep`: the child keeps the result and the check receives a `Ref` to it
    instead of a value (for objects that are not plain data, like a dispatcher).
    `raises`: the check wants to see an exception here (a constructor that must
    refuse a duplicate), so it receives the whole `Answer`. Without it, an
    exception or a value that is not plain data ends the check there, with
    feedback the grader writes ("Raised ValueError."), and the check receives
    the plain value itself.
    """

    op: Mapping[str, Any]
    keep: bool = False
    raises: bool = False


@dataclass(frozen=True)
class Folder:
    """A folder the grader makes for a check before the sandbox starts: never sent to the child.

    The check receives, in its place, the folder's path as the submission's
    sandbox shows it (read-only). See `bookproof.grade.files` for the `Tree`.
    """

    tree: Tree = field(repr=False)


@dataclass(frozen=True)
class Answer:
    """What the child said, after the grader decoded and re-validated it.

    `status` is "returned" (with `value`: plain JSON of exact builtin types),
    "kept" (the object stayed in the child, see `Ref`), "raised" (with
    `raised`: which of a fixed list of builtin exception classes the exception
    is an instance of; never its text), or "wrong_type" (something other than
    exact builtin types: a subclass, an object claiming to equal everything,
    a cycle, or too large).
    """

    status: Literal["returned", "kept", "raised", "wrong_type"]
    value: Any = None
    raised: frozenset[str] = field(default_factory=frozenset)

    def raised_a(self, name: str) -> bool:
        """Whether the call raised an instance of builtin exception class `name`."""
        return self.status == "raised" and name in self.raised


# --- judging helpers ---------------------------------------------------------


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


def expect(condition: bool, reason: str) -> str | None:
    """A check's verdict: None when `condition` holds, else the learner-facing `reason`."""
    return None if condition else reason


# --- argument markers: JSON the child turns into live objects ---------------


def _plain(value: Any) -> Any:
    # Refs become markers; everything else must already be JSON.
    if isinstance(value, Ref):
        return {"$ref": value.name}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def tup(*items: Any) -> dict[str, Any]:
    """A tuple (JSON has none), for arguments such as `extra_tools=(...)`."""
    return {"$tuple": [_plain(item) for item in items]}


def probe(name: str, value: str) -> dict[str, Any]:
    """A harmless tool the child registers: its handler returns `value` and counts its runs.

    Built from the submission's own `ExecutableTool` when it defines one, else
    from `sovereign_agent.tools.ExecutableTool`. Read the count with `probe_count`.
    """
    return {"$probe": {"name": name, "value": value}}


def scratch_path(name: str) -> dict[str, Any]:
    """The path of a file called `name` in a folder of this check's own, in the child's scratch.

    For a submission that keeps its state in files (a store): the child makes
    the folder, fresh for each check, inside its own /tmp, so a check never
    meets another check's files, nor a submission another's. The path itself
    never comes back to the grader; a check only names the file.
    """
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"a scratch file needs a plain name, not {name!r}")
    return {"$file": name}


def tool_call(call_id: str, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A hand-made request, built with the submission's `ToolCall` if it defines one."""
    return {"$call": {"id": call_id, "name": name, "arguments": _plain(dict(arguments))}}


# --- questions -----------------------------------------------------------------


def call(fn: str, *args: Any, keep: bool = False, raises: bool = False, **kwargs: Any) -> Question:
    """Call the submission module's top-level function (or class) `fn`."""
    op = {"op": "call", "fn": fn, "args": _plain(list(args)), "kwargs": _plain(kwargs)}
    return Question(op, keep, raises)


def method(
    obj: Ref, name: str, *args: Any, keep: bool = False, raises: bool = False, **kwargs: Any
) -> Question:
    """Call method `name` of a kept object."""
    op = {
        "op": "method",
        "obj": obj.name,
        "name": name,
        "args": _plain(list(args)),
        "kwargs": _plain(kwargs),
    }
    return Question(op, keep, raises)


def let(value: Any) -> Question:
    """Keep a JSON value in the child, to pass it by reference and look at it again later."""
    return Question({"op": "let", "value": _plain(value)}, keep=True)


def get(obj: Ref) -> Question:
    """Send back a kept object as plain data (to see whether a function changed its argument)."""
    return Question({"op": "get", "obj": obj.name})


def set_item(obj: Ref, path: Sequence[str | int], value: Any) -> Question:
    """Change one item inside a kept object, as a caller changing its own data would."""
    return Question({"op": "set", "obj": obj.name, "path": list(path), "value": _plain(value)})


def attrs(*names: str) -> Question:
    """Which of these top-level names the submission module defines as callables."""
    return Question({"op": "attrs", "names": list(names)})


def probe_count(name: str) -> Question:
    """How many times the probe tool called `name` has run its handler in this check."""
    return Question({"op": "probe_count", "name": name})


def stub(function: str, answers: Mapping[str, Any], *, key: str) -> Question:
    """Replace the module's function `function`, for the rest of this check, by a lookup.

    The stand-in takes one mapping argument and returns `answers[argument[key]]`.
    A check uses it to see *where* a value comes from: with
    `stub("replenishment_need", {"SKU-VANILLA": 5}, key="sku")`, a stock report
    that shows 5 for vanilla reads its need through that one function.
    """
    return Question({"op": "stub", "fn": function, "answers": dict(answers), "key": key})


def folder(tree: Tree) -> Folder:
    """A folder holding `tree`, made by the grader; yield it before any question.

    `path = yield folder({...})` gives the path of that folder in the sandbox,
    the only thing the check passes to the submission. Every folder of a
    check is made before the submission's process starts, so a check yields
    its folders first and its questions after.
    """
    return Folder(tree)


def handed_in(name: str) -> Question:
    """The text of `name`, a data file the book names (a suite, say), as the learner handed it in.

    Answered by the grader from its own copy of the folder, so no learner code
    runs: the check judges the data itself, with code of the grader's. The
    answer is the text, or None when the file is not UTF-8 text.
    """
    return Question({"op": "handed_in", "name": name})
