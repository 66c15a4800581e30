"""Printed in chapters 7, 8 and 10: skills, packaged know-how that narrows a run, never widens.

A skill is a folder holding `SKILL.md`: YAML front matter between two `---`
lines (`name`, `description`, optionally `allowed-tools`), then Markdown
instructions. The order below is the chapter's argument:

1. reading the front matter: a YAML parser in safe mode, made stricter still
   (every value is text; no tags, no anchors or aliases, no duplicate keys,
   no deep nesting), then a Pydantic model that refuses unknown keys; every
   mistake is a `SkillError` naming the file and the line;
2. finding the skills: each folder of one skills folder, none of whose links
   lead outside it, and nothing in it a file cannot be; SKILL.md itself is
   opened by chapter 8's descriptor walk (no link, no hard link, no race) and
   held to chapter 8's character rules;
3. progressive disclosure: the `load_skill` tool's description lists each
   skill's name and description, and only loading one returns its
   instructions;
4. narrowing: a skill that lists tools returns `Narrow`, so the rest of the
   run keeps only what it allowed already and the skill lists too;
5. provenance (chapter 8): a skills folder is the shop's own only when it is
   declared so. Loading an outside skill keeps only the tools that change
   nothing, and a run whose catalogue holds outside skills may allow nothing
   more from its first step.

PyYAML is the optional `skills` extra: only this module imports it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sovereign_agent.documents import DocumentError, invisible_in, open_inside
from sovereign_agent.effects import Effect
from sovereign_agent.shop import SHOP_TOOL_NAMES, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrow, Setup, ToolCall

try:
    import yaml
except ImportError as missing:  # pragma: no cover - depends on how the package was installed
    raise ImportError(
        "sovereign_agent.skills reads YAML and needs PyYAML: install the `skills` extra "
        "(for example `pip install 'sovereign-agent[skills]'`)"
    ) from missing

__all__ = [
    "LOAD_SKILL",
    "MAX_SKILL_BYTES",
    "SKILL_FILE",
    "SKILL_NAME",
    "Provenance",
    "Skill",
    "SkillArguments",
    "SkillError",
    "build_skill_tools",
    "discover_skills",
    "is_inside",
    "line_of",
    "parse_skill",
    "read_skill",
    "refuse_links_out",
    "skill_catalogue",
]

SKILL_FILE = "SKILL.md"
LOAD_SKILL = "load_skill"
# A skill is instructions for one task: a few pages at most. The bound is
# checked before anything is read, so a huge file costs nothing.
MAX_SKILL_BYTES = 32_768
# The front matter is a mapping that holds text, lists of text and one small
# mapping (`metadata`): two levels. A third leaves room for an error that
# names the field, from the Pydantic model, instead of a bare "too deep".
MAX_YAML_DEPTH = 3
# Every skill's name and description is in the load_skill tool's description,
# which the model reads at every step.
MAX_SKILLS = 32
# Files and folders inside one skill folder that are checked for links out.
MAX_SKILL_ENTRIES = 1_000

# Whose a skills folder is. Anything not declared the shop's own is outside.
Provenance = Literal["shop", "outside"]
SHOP_OWN: Provenance = "shop"
OUTSIDE: Provenance = "outside"
# What a run keeps once an outside skill is loaded: the shop's tools that
# change nothing (chapter 8's rule for untrusted text), and load_skill, which
# can only narrow further. A tool not named here is removed, whoever added it.
OUTSIDE_SKILL_KEEPS = frozenset({"list_stock", "supplier", LOAD_SKILL})

SKILL_NAME = r"^[a-z0-9]+(-[a-z0-9]+)*$"
ToolName = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[a-zA-Z0-9_-]+$")]


class SkillError(ValueError):
    """A skill that cannot be used: which file or folder, which line if there is one, and why."""

    def __init__(self, path: Path, line: int | None, reason: str) -> None:
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class SkillLoader(yaml.SafeLoader):
    """PyYAML's safe loader, keeping every value as the text that was written.

    Safe mode builds no Python objects, but it still reads `no` as False,
    `1e3` as a number and `2024-05-01` as a date, and keeps the last of two
    equal keys where a reviewer reads the first. Here a plain value is text,
    whatever it looks like, and a key written twice is refused.
    """

    # No implicit resolvers: nothing is guessed from how a value looks.
    yaml_implicit_resolvers: dict[Any, Any] = {}  # noqa: RUF012 - PyYAML's own class attribute

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[str] = set()
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise yaml.MarkedYAMLError(
                    problem="a key must be text", problem_mark=key.start_mark
                )
            if key.value in seen:
                raise yaml.MarkedYAMLError(
                    problem=f"the key {key.value!r} is written twice", problem_mark=key.start_mark
                )
            seen.add(key.value)
        return super().construct_mapping(node, deep=deep)


def beyond_safe_mode(source: str) -> tuple[int, str] | None:
    """The first tag, anchor, alias or deep nesting in `source`: its line (from 0) and what it is.

    Safe mode allows all four, and front matter needs none. An alias repeats
    a value; a few lines of aliases of aliases (a "billion laughs") repeat one
    value billions of times for whatever walks the result next. Tags name
    types; safe mode refuses Python's, but no type is needed here but text.
    """
    depth = 0
    for event in yaml.parse(source, Loader=SkillLoader):
        problem = None
        # An alias is a node event too, its anchor the name it repeats.
        if isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            problem = "anchors and aliases (& and *) are not allowed"
        elif isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent) and event.tag:
            problem = f"tags are not allowed (found {event.tag})"
        elif isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                problem = f"nested deeper than {MAX_YAML_DEPTH} levels"
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if problem is not None:
            return (0 if event.start_mark is None else event.start_mark.line), problem
    return None


class FrontMatter(BaseModel):
    """What a SKILL.md's front matter may say. Any other key is a mistake worth hearing about.

    `allowed-tools` may be one line of names (spaces or commas between them,
    as agent tools write it) or a YAML list; absent, the skill narrows nothing.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=SKILL_NAME)
    description: str = Field(min_length=1, max_length=1024, pattern=r"\S")
    allowed_tools: tuple[ToolName, ...] | None = Field(default=None, alias="allowed-tools")
    license: str | None = None
    compatibility: str | None = Field(default=None, max_length=500)
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("allowed_tools", mode="before")
    @classmethod
    def split_one_line(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(name for name in re.split(r"[\s,]+", value) if name)
        return value


@dataclass(frozen=True)
class Skill:
    """One skill as the runtime holds it: what the model is told first, then what it loads."""

    name: str
    description: str
    allowed_tools: frozenset[str] | None
    instructions: str
    path: Path


def read_front_matter(path: Path, text: str) -> tuple[str, int, str]:
    """SKILL.md's text as its front matter, the number of the line closing it, and the rest."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise SkillError(path, 1, "SKILL.md must start with a line holding only ---")
    for number, line in enumerate(lines[1:], start=2):
        if line.rstrip() == "---":
            return "\n".join(lines[1 : number - 1]), number, "\n".join(lines[number:]).strip()
    raise SkillError(path, 1, "the front matter is never closed by a line holding only ---")


def line_of(node: yaml.Node, location: tuple[str | int, ...]) -> int:
    """The line, counted in the front matter from 0, of what a Pydantic error points at.

    The key's line, or the list item's; a location that leads past what the
    YAML holds stops at the last line found on the way.
    """
    line = node.start_mark.line
    for part in location:
        if isinstance(node, yaml.MappingNode):
            found = [(key, value) for key, value in node.value if key.value == part]
            if not found:
                return line
            key, node = found[0]
            line = key.start_mark.line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line
    return line


def parse_skill(path: Path, text: str) -> Skill:
    """One SKILL.md's text as a skill, or a SkillError naming the line that is wrong."""
    source, closing, instructions = read_front_matter(path, text)
    # Lines of the front matter count from 0 in YAML's marks, and start on
    # the file's second line.
    try:
        unsafe = beyond_safe_mode(source)
        if unsafe is not None:
            raise SkillError(path, unsafe[0] + 2, f"YAML: {unsafe[1]}")
        loader = SkillLoader(source)
        try:
            node = loader.get_single_node()
            data = None if node is None else loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = 2 if mark is None else mark.line + 2
        raise SkillError(path, line, f"YAML: {error.problem or error.context}") from None
    except yaml.reader.ReaderError as error:
        line = source[: error.position].count("\n") + 2
        raise SkillError(
            path, line, f"YAML: the character {error.character!r} is not allowed"
        ) from None
    if node is None or not isinstance(data, dict):
        raise SkillError(path, 2, "the front matter must be a mapping of keys to values")
    try:
        front = FrontMatter.model_validate(data)
    except ValidationError as error:
        problem = error.errors(include_url=False, include_input=False)[0]
        location = tuple(problem["loc"])
        where = ".".join(str(part) for part in location)
        line = closing if problem["type"] == "missing" else line_of(node, location) + 2
        raise SkillError(path, line, f"{where}: {problem['msg']}") from None
    if front.name != path.parent.name:
        line = line_of(node, ("name",)) + 2
        raise SkillError(path, line, f"name {front.name!r} differs from its folder's name")
    if not instructions:
        raise SkillError(path, closing, "no instructions follow the front matter")
    allowed = None if front.allowed_tools is None else frozenset(front.allowed_tools)
    return Skill(front.name, front.description, allowed, instructions, path)


def is_inside(path: str, root: str) -> bool:
    """Whether the absolute, resolved `path` is `root` or lies below it."""
    return os.path.commonpath([path, root]) == root


def refuse_links_out(folder: Path, root: str) -> None:
    """Refuse a link in `folder` that leads outside `root`, and anything not a file or folder.

    A FIFO, a socket or a device is refused too: reading one could wait forever.
    """
    entries = 0
    for where, folders, files in os.walk(folder):
        for name in (*folders, *files):
            entries += 1
            if entries > MAX_SKILL_ENTRIES:
                raise SkillError(folder, None, f"holds more than {MAX_SKILL_ENTRIES} entries")
            entry = os.path.join(where, name)
            mode = os.lstat(entry).st_mode
            if stat.S_ISLNK(mode):
                if not is_inside(os.path.realpath(entry), root):
                    raise SkillError(
                        Path(entry), None, "a link that leads outside the skills folder"
                    )
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise SkillError(Path(entry), None, "neither a file nor a folder")


def read_skill(folder: Path, root: Path) -> Skill:
    """The skill in `folder`, one folder of the skills folder `root` (already resolved).

    SKILL.md is opened by chapter 8's descriptor walk from `root`, in one look
    at the disk: a link, a hard link or anything but a regular file on the way
    is refused at the moment of opening, so nothing can swap it in between.
    """
    real = os.path.realpath(folder)
    if not is_inside(real, str(root)):
        raise SkillError(folder, None, "a link that leads outside the skills folder")
    if len(folder.name) > 64 or not re.fullmatch(SKILL_NAME, folder.name):
        raise SkillError(folder, None, "a skill's folder is named like a skill: a-z, 0-9 and -")
    try:
        refuse_links_out(Path(real), str(root))
    except OSError as error:
        # An entry changed between being listed and being looked at: the folder
        # is being rewritten while it is read, and nothing from it is used.
        raise SkillError(folder, None, f"changed while it was read: {error.strerror}") from None
    path = folder / SKILL_FILE
    try:
        descriptor = open_inside(root, f"{folder.name}/{SKILL_FILE}")
    except DocumentError as error:
        if error.reason == "no such document":
            raise SkillError(folder, None, f"no {SKILL_FILE} in this folder") from None
        raise SkillError(path, None, error.reason) from None
    with os.fdopen(descriptor, "rb") as file:
        # Read one byte past the bound: a file that grew since it was opened is caught too.
        data = file.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillError(path, None, f"larger than {MAX_SKILL_BYTES} bytes, a skill's limit")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        raise SkillError(path, data[: error.start].count(b"\n") + 1, "not UTF-8 text") from None
    hidden = invisible_in(text)
    if hidden is not None:
        # Chapter 8's rule for documents: what the model reads, Lucy can see.
        line = text[: text.index(hidden)].count("\n") + 1
        raise SkillError(path, line, f"holds the invisible character U+{ord(hidden):04X}")
    skill = parse_skill(path, text)
    hidden = invisible_in(skill.description)
    if hidden is not None:
        # YAML's double quotes can write one as an escape ("\u202e"), which
        # the text above holds only as plain letters: the parsed value is checked too.
        reason = f"its description holds the invisible character U+{ord(hidden):04X}"
        raise SkillError(path, None, reason)
    return skill


def discover_skills(root: Path) -> tuple[Skill, ...]:
    """Every skill in the skills folder `root`, by name; the first bad one stops the search.

    Each folder of `root` is a skill; files beside them (a README) and names
    starting with a dot are passed over. A skill that cannot be read is a
    misconfiguration, reported with its file and line, never skipped.
    """
    try:
        resolved = root.resolve(strict=True)
    except OSError:
        raise SkillError(root, None, "no such skills folder") from None
    if not resolved.is_dir():
        raise SkillError(root, None, "not a folder")
    folders: list[Path] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink() and not is_inside(os.path.realpath(entry), str(resolved)):
            raise SkillError(entry, None, "a link that leads outside the skills folder")
        if entry.is_dir():
            folders.append(entry)
    if len(folders) > MAX_SKILLS:
        raise SkillError(root, None, f"{len(folders)} skills; the limit is {MAX_SKILLS}")
    return tuple(read_skill(folder, resolved) for folder in folders)


class SkillArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    skill: str = Field(min_length=1, max_length=64, pattern=SKILL_NAME)


def skill_catalogue(skills: Iterable[Skill]) -> str:
    """What the model is told before it loads anything: one line per skill, name and description."""
    # One line each, whatever line breaks a description was written with.
    return "\n".join(f"- {skill.name}: {' '.join(skill.description.split())}" for skill in skills)


def load_skill_tool(
    skills: Sequence[Skill], *, provenance: Provenance = OUTSIDE
) -> ExecutableTool[SkillArguments]:
    """The tool that hands the model one skill's instructions, and narrows the run.

    A skill of the shop's own narrows the run to the tools it lists. A skill
    from outside is untrusted text, like a supplier's note: loading it keeps
    only the tools that change nothing, whatever it lists, and when it lists none.
    """
    if provenance not in (SHOP_OWN, OUTSIDE):
        raise ValueError(f"provenance must be {SHOP_OWN!r} or {OUTSIDE!r}, not {provenance!r}")
    by_name = {skill.name: skill for skill in skills}
    if len(by_name) < len(skills):
        raise ValueError("two skills share a name")

    def load(arguments: SkillArguments) -> Any:
        skill = by_name[arguments.skill]
        value = {"skill": skill.name, "instructions": skill.instructions}
        if provenance == OUTSIDE:
            # Its own list can narrow further, never keep a tool that writes.
            listed = OUTSIDE_SKILL_KEEPS if skill.allowed_tools is None else skill.allowed_tools
            return Narrow(
                value, keep=OUTSIDE_SKILL_KEEPS & listed, reason=f"outside skill {skill.name}"
            )
        if skill.allowed_tools is None:
            return value
        return Narrow(value, keep=skill.allowed_tools, reason=f"skill {skill.name}")

    warning = (
        " These skills come from outside the shop: loading one keeps only the tools that "
        "change nothing."
        if provenance == OUTSIDE
        else ""
    )
    return ExecutableTool(
        name=LOAD_SKILL,
        description=(
            "Load a skill: step-by-step instructions for one kind of task. Loading one can "
            f"only narrow the tools of this run, to the tools the skill lists.{warning} Skills:\n"
            + skill_catalogue(skills)
        ),
        arguments=SkillArguments,
        effects=frozenset({Effect.READ}),
        handler=load,
    )


def build_skill_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    skills_root: str,
    provenance: Provenance = OUTSIDE,
    allowed: Iterable[str] = (*SHOP_TOOL_NAMES, LOAD_SKILL),
    before_write: Callable[[ToolCall], None] | None = None,
    hints: bool = False,
) -> Dispatcher:
    """Lucy's shop tools and `load_skill` over the skills in `skills_root`, in one dispatcher.

    A skills folder is the shop's own only when `provenance` says so. An
    outside folder's catalogue is in `load_skill`'s description, which the
    model reads from the first step: such a run may only allow tools that
    change nothing, and one that allows more is refused here, before it starts.
    """
    if provenance not in (SHOP_OWN, OUTSIDE):
        raise ValueError(f"provenance must be {SHOP_OWN!r} or {OUTSIDE!r}, not {provenance!r}")
    skills = discover_skills(Path(skills_root))
    names = sorted(allowed)
    writing = [name for name in names if name not in OUTSIDE_SKILL_KEEPS]
    if provenance == OUTSIDE and skills and writing:
        raise SkillError(
            Path(skills_root),
            None,
            "skills from outside the shop are offered only to runs whose tools change "
            f"nothing, and this run allows {', '.join(writing)}",
        )
    shop_tools = build_tools(shop, prices, hints=hints)
    assert shop_tools.setup is not None  # build_tools records one when it has no authority
    # The shop's own recipe (its copied rows, its prices) plus where the skills
    # are and whose they are: a replay builds the same tools, and reads the
    # skills as they are then.
    setup = Setup(
        "sovereign_agent.skills:build_skill_tools",
        {
            **shop_tools.setup.arguments,
            "skills_root": os.path.abspath(skills_root),
            "provenance": provenance,
            "allowed": names,
        },
    )
    dispatcher = Dispatcher(
        [*shop_tools.tools.values(), load_skill_tool(skills, provenance=provenance)],
        allowed=names,
        before_write=before_write,
        hints=hints,
        setup=setup if before_write is None else None,
    )
    for skill in skills:
        loaded = {"ok": True, "value": {"skill": skill.name, "instructions": skill.instructions}}
        if len(json.dumps(loaded)) > dispatcher.max_result_bytes:
            # Loading it would tell the model `result_too_large`, and narrow the
            # run all the same: a skill nobody could read is refused here instead.
            raise SkillError(skill.path, None, "too long to reach the model in one observation")
    return dispatcher
