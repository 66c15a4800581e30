"""Exercise Book 7, Unit B: reference files a loaded skill may read, on demand, and its tests.

The data and the door's questions are the book's own (this package's
`__init__`): the same skills folders, runs and summaries as the chapter's checks.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ConfigDict

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book07.baseline_and_unit_a import (
    _UNREADABLE,
    BOOK,
    EVERY_TOOL,
    LOAD,
    MAX_REFERENCE_BYTES,
    READ,
    S_UNIT_B,
    _folder,
    _load,
    _pick,
    _read,
    _run,
    _secret,
    _Skill,
    _skill,
    _skill_names,
    _summary,
    _words,
)
from bookproof.grade.books.book07.unit_a_tests import LEARNER_SURFACE, Replaced
from bookproof.grade.files import Sparse
from bookproof.grade.questions import expect, same

__all__ = ["REFERENCE_TESTS"]


# --- exercise 2: reference files, on demand ----------------------------------------------------


def _reference_name(rng: random.Random) -> str:
    return f"{fx.token(rng, rng.randint(3, 8))}.md"


def _references(rng: random.Random, count: int) -> dict[str, str]:
    found: dict[str, str] = {}
    while len(found) < count:
        found[_reference_name(rng)] = f"{_words(rng, 3, 20)}\n{_words(rng, 0, 12)}\n"
    return found


def _strays(rng: random.Random) -> dict[str, Any]:
    """What a references folder may hold that is no reference: listed by nobody."""
    return {
        fx.token(rng, 5) + ".txt": "not a reference\n",
        "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ", k=5)) + ".md": "an upper-case name\n",
        "." + fx.token(rng, 5) + ".md": "hidden\n",
        fx.token(rng, 6): {"old.md": "in a folder\n"},
    }


def _reading_skill(
    rng: random.Random, name: str, references: Mapping[str, Any], *, lists_read: bool = True
) -> tuple[_Skill, dict[str, Any]]:
    tools = [*_pick(rng, ["list_stock", "supplier", LOAD], 1, 3), *([READ] if lists_read else [])]
    skill = _skill(rng, name, tools, ["list_stock"])
    return skill, {"SKILL.md": skill.text(rng), "references": dict(references)}


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Loading a skill also tells the model its references: the sorted names of the .md "
    "files in references/; the instructions and the narrowing are as before.",
    hint="Loading a skill did not list its references as Unit B states (sorted, plain files "
    "with plain names, none without a references folder), or lost what chapter 7's load "
    "gives.",
)
def ex2_load_lists_references(rng: random.Random) -> Trial:
    with_notes, without = _skill_names(rng, 2)
    references = _references(rng, rng.randint(1, 4))
    skill, entry = _reading_skill(rng, with_notes, {**references, **_strays(rng)})
    plain = _skill(rng, without, None, ["draft_order"])
    root = yield from _folder({with_notes: entry, without: {"SKILL.md": plain.text(rng)}})
    loaded = _summary((yield _run(root, EVERY_TOOL, [_load(with_notes)])))
    unlisted = _summary((yield _run(root, EVERY_TOOL, [_load(without)])))
    if loaded is None or unlisted is None:
        return _UNREADABLE
    expected = [
        fx.ok(
            {
                "skill": with_notes,
                "instructions": skill.steps.strip(),
                "references": sorted(references),
            }
        ),
        fx.ok({"skill": without, "instructions": plain.steps.strip(), "references": []}),
    ]
    if not same(expected, [*loaded["observations"], *unlisted["observations"]]):
        return (
            "A load should answer the skill, its instructions and the sorted names of its "
            "references (regular .md files named like a skill), and none when it has none."
        )
    assert skill.tools is not None
    return expect(
        same(sorted(set(EVERY_TOOL) & set(skill.tools)), loaded["offered"][-1])
        and unlisted["narrowings"] == [],
        "Adding the references must keep the narrowing chapter 7's load_skill asked for.",
    )


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="A reference of a skill the run has loaded is returned as {skill, reference, text}.",
    hint="A reference of a skill loaded earlier in the same run was not read back with its "
    "skill, its name and its text.",
)
def ex2_read_after_load(rng: random.Random) -> Trial:
    (name,) = _skill_names(rng, 1)
    references = _references(rng, rng.randint(2, 4))
    _, entry = _reading_skill(rng, name, references)
    root = yield from _folder({name: entry})
    chosen = rng.sample(sorted(references), 2)
    run = _summary((yield _run(root, EVERY_TOOL, [_load(name), *(_read(name, r) for r in chosen)])))
    if run is None:
        return _UNREADABLE
    expected = [fx.ok({"skill": name, "reference": r, "text": references[r]}) for r in chosen]
    return expect(
        same(expected, run["observations"][1:]),
        "After the load, each reference should come back whole, with its skill's name and its own.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A reference of a skill this run has not loaded, or a name the skill does not have, "
    "fails (tool_failed).",
    hint="A reference was read for a skill not loaded in this run, or a name that is not one "
    "of its references was not refused.",
)
def ex2_refused_before_load(rng: random.Random) -> Trial:
    first, other = _skill_names(rng, 2)
    ours, theirs = _references(rng, 2), _references(rng, 1)
    _, entry = _reading_skill(rng, first, ours)
    _, other_entry = _reading_skill(rng, other, theirs)
    root = yield from _folder({first: entry, other: other_entry})
    mine = rng.choice(sorted(ours))
    missing = next(name for name in (_reference_name(rng) for _ in range(99)) if name not in ours)
    calls = [
        _read(first, mine),
        _load(first),
        _read(first, missing),
        _read(other, sorted(theirs)[0]),
    ]
    run = _summary((yield _run(root, EVERY_TOOL, calls)))
    if run is None:
        return _UNREADABLE
    return expect(
        fx.codes(run) == ["tool_failed", "ok", "tool_failed", "tool_failed"],
        "A read before its skill's load, of a name the skill lacks, or of a skill not loaded "
        "should each fail.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A reference name that is a path, or not a lowercase .md name, is refused as "
    "invalid_arguments, before any handler runs.",
    hint="A reference name that is a path, or not a lowercase .md name, reached the handler "
    "instead of being refused as invalid arguments.",
    requires=ex2_read_after_load,
)
def ex2_names_are_plain(rng: random.Random) -> Trial:
    secret = _secret(rng)
    (name,) = _skill_names(rng, 1)
    references = _references(rng, 1)
    _, entry = _reading_skill(rng, name, references)
    root = yield from _folder({name: entry}, {"secret.md": secret + "\n"})
    real = sorted(references)[0]
    paths = [
        "../SKILL.md",
        "../../../secret.md",
        f"references/{real}",
        f"/etc/{real}",
        f"./{real}",
        real.upper(),
        real.removesuffix(".md") + ".txt",
        f"{real}/",
    ]
    chosen = rng.sample(paths, 4)
    run = _summary((yield _run(root, EVERY_TOOL, [_load(name), *(_read(name, p) for p in chosen)])))
    if run is None:
        return _UNREADABLE
    if secret in json.dumps(run):
        return "A file outside the skill's references reached the run."
    return expect(
        fx.codes(run) == ["ok", *["invalid_arguments"] * len(chosen)],
        "A name that is a path or not a plain .md name should be invalid_arguments.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A reference over 8,192 bytes fails, and none of its text reaches the model; one of "
    "exactly 8,192 bytes is read.",
    hint="A reference over the size limit was read, or some of its text reached the model, or "
    "one of exactly the limit was refused.",
)
def ex2_bounded(rng: random.Random) -> Trial:
    secret = _secret(rng)
    (name,) = _skill_names(rng, 1)
    full, big, huge = _skill_names(rng, 3)
    line = f"{secret} {_words(rng, 3, 6)}\n"
    big_text = line * (MAX_REFERENCE_BYTES // len(line) + 1) + "x" * rng.randint(0, 2_000)
    full_text = ("a" * 63 + "\n") * (MAX_REFERENCE_BYTES // 64)
    references: dict[str, Any] = {
        f"{full}.md": full_text,
        f"{big}.md": big_text,
        f"{huge}.md": Sparse(rng.randint(1, 16) * 1024 * 1024),
    }
    _, entry = _reading_skill(rng, name, references)
    root = yield from _folder({name: entry})
    calls = [
        _load(name),
        _read(name, f"{big}.md"),
        _read(name, f"{full}.md"),
        _read(name, f"{huge}.md"),
    ]
    run = _summary((yield _run(root, EVERY_TOOL, calls)))
    if run is None:
        return _UNREADABLE
    if secret in json.dumps(run):
        return "Text of a reference over 8,192 bytes reached the model."
    codes = fx.codes(run)
    if codes != ["ok", "tool_failed", "ok", "tool_failed"]:
        return "A reference over 8,192 bytes should fail, and one of exactly 8,192 be read."
    return expect(
        same(
            fx.ok({"skill": name, "reference": f"{full}.md", "text": full_text}),
            run["observations"][2],
        ),
        "A reference of exactly 8,192 bytes should come back whole.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A skill that does not list read_reference takes it away when it loads.",
    hint="A skill whose tools leave out reading references still let the run read them.",
    requires=ex2_read_after_load,
)
def ex2_kept_only_if_listed(rng: random.Random) -> Trial:
    (name,) = _skill_names(rng, 1)
    references = _references(rng, 1)
    _, entry = _reading_skill(rng, name, references, lists_read=False)
    root = yield from _folder({name: entry})
    reference = sorted(references)[0]
    run = _summary((yield _run(root, EVERY_TOOL, [_load(name), _read(name, reference)])))
    if run is None:
        return _UNREADABLE
    return expect(
        fx.codes(run) == ["ok", "tool_not_allowed"]
        and all(READ not in offer for offer in run["offered"][1:] if isinstance(offer, list))
        and references[reference].strip() not in json.dumps(run),
        "After loading a skill that does not list read_reference, a read should be "
        "tool_not_allowed.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A skill loaded in one run does not let another run read its references.",
    hint="A skill loaded in one run let another run read its references.",
    requires=ex2_read_after_load,
)
def ex2_runs_do_not_share(rng: random.Random) -> Trial:
    (name,) = _skill_names(rng, 1)
    references = _references(rng, 1)
    _, entry = _reading_skill(rng, name, references)
    root = yield from _folder({name: entry})
    reference = sorted(references)[0]
    first = _summary((yield _run(root, EVERY_TOOL, [_load(name)])))
    later = _summary((yield _run(root, EVERY_TOOL, [_read(name, reference)])))
    if first is None or later is None:
        return _UNREADABLE
    return expect(
        fx.codes(later) not in (["ok"], [None]) and len(fx.codes(later)) == 1,
        "A read in a run that never loaded the skill should fail, whatever an earlier run loaded.",
    )


REFERENCE_TESTS = BOOK.learner_tests(
    exercise=2, file="test_book07_references.py", section=S_UNIT_B, surface=LEARNER_SURFACE
)


def _faulty_references(
    reference: ModuleType,
    *,
    loaded_check: str = "this skill",
    name_rule: bool = True,
    keeps_narrow: bool = True,
) -> Replaced:
    """Replace the reference's reference_tools by one wrong in one of the ways given."""
    original = reference.reference_tools

    class LaxArguments(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        skill: str
        name: str

    def reference_tools(skills: Sequence[Any]) -> tuple[Any, ...]:
        load_tool, read_tool = original(skills)
        by_name = {skill.name: skill for skill in skills}
        loaded: set[str] = set()

        def load(arguments: Any) -> Any:
            result = load_tool.handler(arguments)
            loaded.add(arguments.skill)
            if not keeps_narrow and isinstance(result, reference.Narrow):
                return result.value
            return result

        def read(arguments: Any) -> dict[str, Any]:
            if loaded_check == "this skill" and arguments.skill not in loaded:
                raise PermissionError(arguments.skill)
            if loaded_check == "any skill" and not loaded:
                raise PermissionError(arguments.skill)
            skill = by_name[arguments.skill]
            if name_rule:
                text = reference.read_reference_text(skill, arguments.name)
            else:
                text = _read_any(skill.path.parent / "references" / arguments.name)
            return {"skill": arguments.skill, "reference": arguments.name, "text": text}

        return (
            dataclasses.replace(load_tool, handler=load),
            dataclasses.replace(
                read_tool,
                handler=read,
                arguments=read_tool.arguments if name_rule else LaxArguments,
            ),
        )

    vars(reference)["reference_tools"] = reference_tools
    return {"run_calls": reference.run_calls}


def _read_any(path: Path) -> str:
    # A version with no name rule still never waits on a FIFO: it is wrong, not stuck.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(path.name)
        return file.read(MAX_REFERENCE_BYTES).decode("utf-8")


def reads_before_load(reference: ModuleType, rng: random.Random) -> Replaced:
    return _faulty_references(reference, loaded_check="never")


def reads_other_skills(reference: ModuleType, rng: random.Random) -> Replaced:
    return _faulty_references(reference, loaded_check="any skill")


def takes_any_name(reference: ModuleType, rng: random.Random) -> Replaced:
    return _faulty_references(reference, name_rule=False)


def load_drops_narrow(reference: ModuleType, rng: random.Random) -> Replaced:
    return _faulty_references(reference, keeps_narrow=False)


REFERENCE_TESTS.catches_all(
    "ex2_tests_catch",
    points=2,
    versions={
        "reads a reference before its skill is loaded": reads_before_load,
        "reads any skill's references once some skill is loaded": reads_other_skills,
        "reads any path it is given as a reference's name": takes_any_name,
        "forgets the skill's narrowing when it lists the references": load_drops_narrow,
    },
)
