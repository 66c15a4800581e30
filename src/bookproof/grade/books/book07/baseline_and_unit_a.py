"""Exercise Book 7: the checks for a submission's `skill_tools.py`.

The graded interface is the "grader's door" at the end of the starter
(`exercises/book07/skill_tools.py`), JSON in and JSON out:

- `skills_in_folder(root)`: every skill in the skills folder `root`
  (`name`, `description`, `allowed_tools`, `instructions`), or the refusal of
  the first bad one, `{"error", "path", "line"}`;
- `review_folder(root, allowed)`: exercise 1's review of every skill in
  `root`, for a run that allows `allowed`;
- `run_calls(root, allowed, calls)`: a scripted run that makes `calls`
  ([name, arguments] each, ids g1, g2, ...) one per step over Lucy's shop
  tools, `load_skill` and `read_reference`, and returns `offered`,
  `observations`, `narrowings`, `executed` and `refused`.

The skills folders are the grader's (`questions.folder`): made on the
grader's side before the submission's sandbox starts and shown to it
read-only, with a planted secret beside them for links out to lead to. The
submission learns each folder's path and nothing else, so whatever it
answers about a skill, it read from the disk.

Every expected value is worked out here from data this module chose: skill
names, descriptions, tool lists, steps, references and secrets change on
every run. The chapter's rules (the intersection, the name rules, the
bound) are written out again here, never read from the book.

The book in three files: this one declares it, chooses the data, asks the
door and holds chapter 7's checks and exercise 1's; `unit_a_tests` grades
Unit A's tests by the faulty versions they catch; `unit_b` holds exercise 2
(reference files, on demand) and its tests.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book, Trial
from bookproof.grade.files import Link, Tree
from bookproof.grade.questions import Asks, Question, call, expect, folder, same

__all__ = ["BOOK"]

BOOK = Book(7, "Exercise Book 7: skills", module="skill_tools", chapter="Chapter 7")

S_SAFE = BOOK.section("7.2 What safe mode still lets through")
S_READ = BOOK.section("7.3 Reading SKILL.md")
S_FIND = BOOK.section("7.4 Finding skills, and links that lead out")
S_SCOPED = BOOK.section("7.6 A dispatcher that can only narrow")
S_RUN = BOOK.section("7.7 A run that narrows while it runs")
S_UNIT_A = BOOK.section("7.14 Exercises") + " (Exercise Book 7, Unit A)"
S_UNIT_B = BOOK.section("7.14 Exercises") + " (Exercise Book 7, Unit B)"

# Chapter 7's facts, written out again: the tools the door registers for any
# submission (read_reference only once exercise 2 is done, so no check of the
# chapter or of exercise 1 lets a run allow it), and exercise 2's rules.
LOAD = "load_skill"
READ = "read_reference"
REGISTERED = frozenset({"draft_order", "list_stock", "supplier", LOAD})
EVERY_TOOL = sorted(REGISTERED | {READ})
# Names no tool in the run has: what skills written elsewhere ask for.
STRANGERS = ("place_order", "run_shell", "refund_customer", "list_stok", "send_email")
POOL = (*sorted(REGISTERED), *STRANGERS)
MAX_REFERENCE_BYTES = 8_192
REFERENCE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\.md$")
LIST = ["list_stock", {}]
DRAFT = ["draft_order", {"sku": fx.VANILLA, "quantity": 6}]
_RUN_KEYS = ("offered", "observations", "narrowings", "executed", "refused")
_REVIEW_KEYS = ("skill", "lists", "keeps", "removes", "ignores", "unknown", "unreachable")
_UNREADABLE = "The door did not return a run summary (did run_calls or a tool raise?)."
_NO_REVIEW = "The door did not return one review per skill (did review_folder raise?)."


# --- data this book chooses ----------------------------------------------------------


def _skill_name(rng: random.Random) -> str:
    return f"{fx.token(rng, rng.randint(3, 7))}-{fx.token(rng, rng.randint(3, 7))}"


def _skill_names(rng: random.Random, count: int) -> list[str]:
    names: set[str] = set()
    while len(names) < count:
        names.add(_skill_name(rng))
    return sorted(names)


def _words(rng: random.Random, low: int, high: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join(
        "".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
        for _ in range(rng.randint(low, high))
    )


def _tools_lines(rng: random.Random, tools: Sequence[str]) -> list[str]:
    """`allowed-tools` written in one of the forms chapter 7 reads: spaces, commas, a list."""
    form = rng.choice(["spaces", "commas", "flow", "block"])
    if not tools:
        # An empty list is a list only in the flow form: "allowed-tools:" alone says nothing.
        return ["allowed-tools: []"]
    if form == "spaces":
        return [f"allowed-tools: {' '.join(tools)}"]
    if form == "commas":
        return [f"allowed-tools: {', '.join(tools)}"]
    if form == "flow":
        return [f"allowed-tools: [{', '.join(tools)}]"]
    return ["allowed-tools:", *(f"  - {tool}" for tool in tools)]


def _steps(rng: random.Random, mentions: Sequence[str]) -> str:
    """Markdown steps naming `mentions` in backticks, one numbered step each, in order."""
    lines = [f"# {_words(rng, 1, 3).capitalize()}", ""]
    for number, word in enumerate(mentions, start=1):
        lines.append(f"{number}. Call `{word}` to {_words(rng, 1, 5)}.")
    lines.append(f"{len(mentions) + 1}. Tell the shop owner {_words(rng, 2, 6)}.")
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Skill:
    """A skill as this book writes it, and what chapter 7 must read back."""

    name: str
    description: str
    tools: tuple[str, ...] | None
    steps: str
    extra: tuple[str, ...] = ()  # more front matter lines, before allowed-tools

    def text(self, rng: random.Random) -> str:
        lines = ["---", f"name: {self.name}", f"description: {self.description}", *self.extra]
        if self.tools is not None:
            lines += _tools_lines(rng, self.tools)
        return "\n".join([*lines, "---", self.steps]) + "\n"

    def read_back(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "allowed_tools": None if self.tools is None else sorted(set(self.tools)),
            "instructions": self.steps.strip(),
        }


def _skill(
    rng: random.Random,
    name: str,
    tools: Sequence[str] | None,
    mentions: Sequence[str] = (),
) -> _Skill:
    extra = rng.choice([(), ("license: MIT",), ("metadata:", f"  author: {_words(rng, 1, 2)}")])
    return _Skill(
        name,
        _words(rng, 3, 12).capitalize() + ".",
        None if tools is None else tuple(tools),
        _steps(rng, mentions),
        extra,
    )


def _pick(rng: random.Random, pool: Sequence[str], low: int, high: int) -> list[str]:
    return rng.sample(list(pool), rng.randint(low, min(high, len(pool))))


def _secret(rng: random.Random) -> str:
    return "secret-token-" + fx.token(rng, 12)


def _skills_tree(skills: Sequence[_Skill], rng: random.Random) -> dict[str, Any]:
    return {skill.name: {"SKILL.md": skill.text(rng)} for skill in skills}


def _folder(skills: Tree, beside: Mapping[str, Any] | None = None) -> Asks[str]:
    """A skills folder holding `skills`, with `beside` beside it: its path."""
    base = yield folder({"skills": skills, **(beside or {})})
    return f"{base}/skills"


# --- asking, and reading the answers -----------------------------------------------------


def _run(root: str, allowed: Sequence[str], calls: list[list[Any]]) -> Question:
    return call("run_calls", root, list(allowed), calls)


def _load(skill: str) -> list[Any]:
    return [LOAD, {"skill": skill}]


def _read(skill: str, name: str) -> list[Any]:
    return [READ, {"skill": skill, "name": name}]


def _summary(value: Any) -> dict[str, Any] | None:
    """The run summary, when it has the door's shape; None for anything else."""
    return fx.run_summary(value, _RUN_KEYS)


def _reviews(value: Any, skills: Sequence[str]) -> list[dict[str, Any]] | None:
    """The review, one entry per skill in `skills`' order, when it has that shape."""
    if not isinstance(value, list) or len(value) != len(skills):
        return None
    if not all(
        isinstance(entry, dict) and entry.get("skill") == skill
        for entry, skill in zip(value, skills, strict=True)
    ):
        return None
    return value


def _review(skill: _Skill, allowed: Sequence[str]) -> dict[str, Any]:
    """What exercise 1's review says of `skill` in a run allowing `allowed`, worked out here."""
    usable = set(allowed) & REGISTERED
    listed = None if skill.tools is None else set(skill.tools)
    keeps = usable if listed is None else usable & listed
    known = REGISTERED | (listed or set())
    mentioned = set(re.findall(r"`([a-zA-Z0-9_-]+)`", skill.steps)) & known
    return {
        "skill": skill.name,
        "lists": None if listed is None else sorted(listed),
        "keeps": sorted(keeps),
        "removes": sorted(usable - keeps),
        "ignores": [] if listed is None else sorted(listed - usable),
        "unknown": [] if listed is None else sorted(listed - REGISTERED),
        "unreachable": sorted(mentioned - keeps),
    }


def _only(entry: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    return {key: entry.get(key) for key in keys}


def _reviewed(
    skills: Sequence[_Skill], allowed: Sequence[str], reviews: Sequence[Any], keys: Sequence[str]
) -> bool:
    """Whether each review says, under `keys`, what this book works out for its skill."""
    return all(
        same(_only(_review(skill, allowed), keys), _only(review, keys))
        for skill, review in zip(skills, reviews, strict=True)
    )


# --- chapter 7, as the starter already has it ----------------------------------------


@BOOK.baseline(
    points=1,
    section=S_READ,
    asks="Every skill in a folder is read back: name, description, tools (any of the three "
    "forms) and instructions.",
    hint="discover_skills must read each folder's SKILL.md (passing over files and names "
    "starting with a dot), accept allowed-tools as one line (spaces or commas) or a YAML list, "
    "and keep the instructions after the front matter.",
)
def ch7_reads_skills(rng: random.Random) -> Trial:
    skills = [
        _skill(rng, name, rng.choice([None, _pick(rng, POOL, 1, 4)]))
        for name in _skill_names(rng, rng.randint(2, 4))
    ]
    tree = _skills_tree(skills, rng)
    # What discovery passes over: a file beside the skills, and a hidden
    # folder whose SKILL.md would be refused if it were read.
    tree["README.md"] = f"# {_words(rng, 2, 4)}\n"
    tree["." + fx.token(rng, 6)] = {"SKILL.md": "not a skill at all\n"}
    root = yield from _folder(tree)
    answer = yield call("skills_in_folder", root)
    return expect(
        same([skill.read_back() for skill in skills], answer),
        "The skills read back are not the ones in the folder, in order of name, with their "
        "descriptions, sorted tool lists (None when absent) and instructions.",
    )


def _malformed(rng: random.Random, name: str) -> tuple[str, int]:
    """A SKILL.md with one mistake of the four chapter 7 refuses, and the line it is on."""
    lines = ["---", f"name: {name}", f"description: {_words(rng, 3, 8)}."]
    lines += rng.sample(["license: MIT", "compatibility: any shop", "allowed-tools: list_stock"], 2)
    kind = rng.choice(["typo", "duplicate", "tag", "alias"])
    if kind == "typo":
        key = rng.choice(["allowed_tools", "alowed-tools", "descripton", "licence", "tools"])
        lines.append(f"{key}: list_stock")
    elif kind == "duplicate":
        key = rng.choice(["name", "description", lines[3].split(":")[0], lines[4].split(":")[0]])
        lines.append(f"{key}: {name}")
    elif kind == "tag":
        lines.append(
            rng.choice(
                [
                    "metadata: !!python/object/apply:os.system ['echo hi']",
                    "license: !shop MIT",
                    "compatibility: !!str any",
                ]
            )
        )
    else:
        lines.append(f"metadata: &{fx.token(rng, 4)} {{author: lucy}}")
    line = len(lines)
    if kind == "alias":
        anchor = lines[-1].split("&")[1].split()[0]
        lines.append(f"x-copy: *{anchor}")
    lines += ["---", _steps(rng, ["list_stock"])]
    return "\n".join(lines) + "\n", line


@BOOK.baseline(
    points=1,
    section=S_SAFE,
    asks="A misspelt key, a key written twice, a tag or an alias is refused with its file and "
    "line.",
    hint="parse_skill must refuse tags, anchors and aliases before building anything, a key "
    "written twice at its second line, and an unknown key (extra='forbid') at its own line.",
)
def ch7_malformed_named(rng: random.Random) -> Trial:
    names = _skill_names(rng, rng.randint(2, 4))
    bad = rng.choice(names)
    tree = _skills_tree([_skill(rng, n, ["list_stock"]) for n in names if n != bad], rng)
    text, line = _malformed(rng, bad)
    tree[bad] = {"SKILL.md": text}
    root = yield from _folder(tree)
    answer = yield call("skills_in_folder", root)
    if not (isinstance(answer, dict) and isinstance(answer.get("error"), str)):
        return "A folder holding a malformed skill should be refused, not read."
    return expect(
        same({"path": f"{root}/{bad}/SKILL.md", "line": line}, _only(answer, ("path", "line"))),
        f"The refusal should name the malformed skill's SKILL.md and line {line}.",
    )


@BOOK.baseline(
    points=1,
    section=S_FIND,
    asks="A link that leads out of the skills folder is refused, naming the link; nothing "
    "behind it is read.",
    hint="discover_skills must refuse a link in the folder, or in a skill's folder, whose real "
    "path is outside the skills folder, with the link's own path in the error.",
)
def ch7_links_out_refused(rng: random.Random) -> Trial:
    secret = _secret(rng)
    names = _skill_names(rng, rng.randint(1, 3))
    skills = [_skill(rng, name, ["list_stock"]) for name in names]
    tree = _skills_tree(skills, rng)
    outside = _skill(rng, _skill_name(rng), ["place_order"])
    beside = {
        "secret.txt": secret + "\n",
        "elsewhere": {outside.name: {"SKILL.md": outside.text(rng)}},
    }
    link = fx.token(rng, 5) + rng.choice([".md", "", "-notes.md"])
    where = rng.choice(["top", "references", "skill"])
    if where == "top":
        # A skill that is not in the folder at all, brought in by a link.
        name = _skill_name(rng)
        tree[name] = rng.choice(
            [Link(f"../elsewhere/{outside.name}"), Link(f"elsewhere/{outside.name}", absolute=True)]
        )
        path = name
    else:
        skill = rng.choice(names)
        up = "../../../" if where == "references" else "../../"
        target = rng.choice(
            [Link(f"{up}secret.txt"), Link("secret.txt", absolute=True), Link(f"{up}elsewhere")]
        )
        if where == "references":
            tree[skill]["references"] = {"prices.md": "Vanilla: 250 pence.\n", link: target}
            path = f"{skill}/references/{link}"
        else:
            tree[skill][link] = target
            path = f"{skill}/{link}"
    root = yield from _folder(tree, beside)
    answer = yield call("skills_in_folder", root)
    if secret in json.dumps(answer):
        return "A file outside the skills folder was read."
    if not (isinstance(answer, dict) and isinstance(answer.get("error"), str)):
        return "A folder holding a link out of it should be refused, not read."
    return expect(
        same(f"{root}/{path}", answer.get("path")),
        "The refusal should name the link that leads out, by its own path.",
    )


@BOOK.baseline(
    points=1,
    section=S_RUN,
    asks="After a skill loads, the run is offered only the tools it allowed that the skill lists.",
    hint="load_skill must return Narrow(value, keep=the skill's tools, ...), and the loop must "
    "carry on with dispatcher.scoped(kept).",
)
def ch7_narrows(rng: random.Random) -> Trial:
    allowed = sorted(
        {LOAD, *_pick(rng, sorted(REGISTERED - {LOAD}), 1, 3), *_pick(rng, STRANGERS, 0, 2)}
    )
    # A list that leaves out at least one tool of the run, so the load must show.
    left_out = rng.choice(sorted(set(allowed) & REGISTERED))
    listed = _pick(rng, sorted(REGISTERED - {left_out}) + list(STRANGERS), 1, 5)
    (name,) = _skill_names(rng, 1)
    skill = _skill(rng, name, listed)
    root = yield from _folder(_skills_tree([skill], rng))
    run = _summary((yield _run(root, allowed, [_load(name)])))
    if run is None:
        return _UNREADABLE
    before = sorted(set(allowed) & REGISTERED)
    after = sorted(set(before) & set(listed))
    return expect(
        fx.codes(run) == ["ok"] and same([before, after], run["offered"]),
        "Before the load, the run's own tools should be offered; after it, only those the "
        "skill lists.",
    )


def _simulate(
    allowed: Sequence[str], skills: Mapping[str, _Skill], calls: Sequence[list[Any]]
) -> tuple[list[list[str]], list[dict[str, Any]], list[str]]:
    """The offers, narrowings and codes of a run of `calls`, worked out as chapter 7 says."""
    usable = set(allowed) & REGISTERED
    offers: list[list[str]] = [sorted(usable)]
    narrowings: list[dict[str, Any]] = []
    codes: list[str] = []
    for number, (name, arguments) in enumerate(calls, start=1):
        if name not in usable:
            codes.append("tool_not_allowed")
        elif name == LOAD and arguments["skill"] not in skills:
            codes.append("tool_failed")
        else:
            codes.append("ok")
            skill = skills[arguments["skill"]] if name == LOAD else None
            if skill is not None and skill.tools is not None:
                listed = set(skill.tools)
                narrowings.append(
                    {
                        "call_id": f"g{number}",
                        "tool": LOAD,
                        "kept": sorted(usable & listed),
                        "removed": sorted(usable - listed),
                        "ignored": sorted(listed - usable),
                    }
                )
                usable &= listed
        offers.append(sorted(usable))
    return offers, narrowings, codes


@BOOK.baseline(
    points=2,
    section=S_SCOPED,
    asks="Whatever the run allows and the skills list, loading skills never widens what is "
    "offered, and the names a skill asked for in vain are recorded as ignored.",
    hint="A narrowing keeps usable & listed only, records listed - usable as ignored, and the "
    "next load narrows the already narrowed run again.",
)
def ch7_never_widens(rng: random.Random) -> Trial:
    rounds = []
    for _ in range(3):
        allowed = sorted({LOAD, *_pick(rng, POOL, 0, 6)})
        names = _skill_names(rng, rng.randint(2, 3))
        lists: list[list[str] | None] = [[LOAD, *_pick(rng, POOL, 0, 3)]]
        lists += [
            rng.choice([None, [], _pick(rng, POOL, 1, 6), [LOAD, *_pick(rng, POOL, 1, 4)]])
            for _ in names[1:]
        ]
        skills = {name: _skill(rng, name, tools) for name, tools in zip(names, lists, strict=True)}
        # The first load always narrows (its skill keeps load_skill and little
        # else); the loads after it, of any skill or of none, narrow again or fail.
        calls = [_load(names[0])]
        calls += [_load(rng.choice([*names, _skill_name(rng)])) for _ in range(rng.randint(1, 3))]
        calls.insert(
            rng.randint(1, len(calls)), rng.choice([LIST, DRAFT, [rng.choice(STRANGERS), {}]])
        )
        root = yield from _folder(_skills_tree(list(skills.values()), rng))
        rounds.append((root, allowed, skills, calls))
    for root, allowed, skills, calls in rounds:
        run = _summary((yield _run(root, allowed, calls)))
        if run is None:
            return _UNREADABLE
        offers, narrowings, codes = _simulate(allowed, skills, calls)
        if not all(
            isinstance(offer, list) and set(offer) <= set(allowed) for offer in run["offered"]
        ):
            return "A tool the run did not allow was offered."
        if not same(offers, run["offered"]):
            return "After a load, a tool the run or a loaded skill leaves out was still offered."
        seen = [
            _only(n, ("call_id", "tool", "kept", "removed", "ignored"))
            if isinstance(n, dict)
            else n
            for n in run["narrowings"]
        ]
        if not same(narrowings, seen):
            return (
                "The run record should name each load that narrowed, what it kept and "
                "removed, and the names it asked for that the run did not allow."
            )
        if fx.codes(run) != codes:
            return "A call should be refused once a load has taken its tool away."
    return None


# --- exercise 1: reviewing a skills folder -----------------------------------------------


def _partial_run(rng: random.Random, low: int) -> tuple[str, list[str], list[str]]:
    """A run allowing load_skill, a name no tool has, and `low` to 2 more of the tools.

    Returns that name, all the run allows, and the registered tools it forbids (one at least).
    """
    stranger = rng.choice(STRANGERS)
    allowed = sorted({LOAD, stranger, *_pick(rng, sorted(REGISTERED - {LOAD}), low, 2)})
    return stranger, allowed, sorted(REGISTERED - set(allowed))


def _ask_review(
    rng: random.Random, skills: Sequence[_Skill], allowed: Sequence[str]
) -> Asks[list[dict[str, Any]] | None]:
    """The review of a folder of `skills` for a run allowing `allowed`, when it has its shape."""
    root = yield from _folder(_skills_tree(skills, rng))
    answer = yield call("review_folder", root, list(allowed))
    return _reviews(answer, [skill.name for skill in skills])


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="The review keeps what the run allows, registers and the skill lists, and removes the "
    "rest of what the run could use.",
    hint="The review's keeps, removes or lists did not match what the run would really keep "
    "and remove when the skill loads.",
)
def ex1_keeps_and_removes(rng: random.Random) -> Trial:
    stranger, allowed, forbidden = _partial_run(rng, 1)
    names = _skill_names(rng, rng.randint(3, 5))
    skills = [_skill(rng, name, _pick(rng, POOL, 1, 5)) for name in names]
    # A skill that lists a name the run allows but no tool has, and one that
    # lists a tool the run forbids: neither is ever kept.
    skills[0] = _skill(rng, names[0], [stranger, *_pick(rng, sorted(allowed), 1, 2)])
    skills[1] = _skill(rng, names[1], [*forbidden, *_pick(rng, sorted(REGISTERED), 1, 2)])
    reviews = yield from _ask_review(rng, skills, allowed)
    if reviews is None:
        return _NO_REVIEW
    return expect(
        _reviewed(skills, allowed, reviews, ("skill", "lists", "keeps", "removes")),
        "keeps, removes or lists is wrong for a skill: a name no tool has, or a tool the run "
        "forbids, is never kept.",
    )


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="ignores names every listed name the run cannot use; unknown only those no tool has.",
    hint="The review's ignores or unknown did not name the skill's tools the run does not "
    "allow, or those no one registered.",
)
def ex1_ignores_and_unknown(rng: random.Random) -> Trial:
    stranger, allowed, forbidden = _partial_run(rng, 0)
    names = _skill_names(rng, rng.randint(3, 4))
    skills = [_skill(rng, name, _pick(rng, POOL, 1, 6)) for name in names]
    # Asked for in vain: by a tool the run forbids, by a name the run allows
    # but no tool has, and by a typo.
    skills[0] = _skill(rng, names[0], [rng.choice(forbidden), stranger])
    skills[1] = _skill(rng, names[1], ["list_stok", *_pick(rng, sorted(REGISTERED), 0, 2)])
    reviews = yield from _ask_review(rng, skills, allowed)
    if reviews is None:
        return _NO_REVIEW
    return expect(
        _reviewed(skills, allowed, reviews, ("ignores", "unknown")),
        "ignores or unknown is wrong for a skill: a tool the run forbids is ignored but not "
        "unknown; a name no tool has is both.",
    )


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="unreachable names the tools a skill's steps call (in backticks) that it would not keep; "
    "backticked words that name no tool are not counted.",
    hint="The review missed a step of the instructions that names a tool the skill would take "
    "away, or named one it keeps.",
)
def ex1_unreachable_steps(rng: random.Random) -> Trial:
    allowed = sorted(REGISTERED)
    names = _skill_names(rng, rng.randint(2, 4))
    skills = []
    for index, name in enumerate(names):
        listed = _pick(rng, POOL, 1, 4)
        # Tools, names only the skill lists (the first skill always has one
        # its steps call), and words that are not tools (a field of the stock
        # report, another skill, a folder).
        own = [rng.choice(STRANGERS)] if index == 0 else []
        listed += [word for word in own if word not in listed]
        words = [
            *_pick(rng, sorted(REGISTERED), 1, 3),
            *own,
            *_pick(rng, listed, 0, 2),
            *rng.sample(["needed", "on_hand", names[0], "references", fx.token(rng, 6)], 2),
        ]
        rng.shuffle(words)
        skills.append(_skill(rng, name, listed, words))
    reviews = yield from _ask_review(rng, skills, allowed)
    if reviews is None:
        return _NO_REVIEW
    return expect(
        _reviewed(skills, allowed, reviews, ("unreachable",)),
        "unreachable is wrong for a skill: only a backticked word naming a tool (registered, or "
        "listed by the skill) that the skill would not keep counts.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A skill without allowed-tools keeps every tool the run can use, and removes, ignores "
    "and names as unknown nothing.",
    hint="For a skill that lists no tools, the review did not say it keeps everything the run "
    "allows and removes nothing.",
)
def ex1_lists_nothing(rng: random.Random) -> Trial:
    allowed = sorted({LOAD, *_pick(rng, sorted(REGISTERED), 1, 3), *_pick(rng, STRANGERS, 1, 2)})
    names = _skill_names(rng, rng.randint(1, 3))
    skills = [_skill(rng, name, None, _pick(rng, sorted(REGISTERED), 1, 3)) for name in names]
    reviews = yield from _ask_review(rng, skills, allowed)
    if reviews is None:
        return _NO_REVIEW
    return expect(
        _reviewed(skills, allowed, reviews, _REVIEW_KEYS),
        "A skill that lists no tools narrows nothing: its review should keep all the run can "
        "use, with lists None and nothing removed, ignored or unknown.",
    )


# The rest of the book declares its checks after these, in report order: the
# modules import BOOK from this one, so they are imported once it exists.
