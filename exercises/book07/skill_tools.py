"""Exercise Book 7 starter: chapter 7's skills, ready for the exercises.

This is chapter 7's skill reader, discovery and `load_skill` (the learner
file's definitions, unchanged; the dispatcher and the loop come from the
book's runtime), with, at the end, the three exercises and "the grader's
door": small functions through which the grader, which can only send and
receive plain JSON, calls your code on skills folders of its own. It runs,
and it does none of the exercises yet: look for `Exercise 1`, `Exercise 2`
and `Exercise 3`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, ToolMessage
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import SHOP_TOOL_NAMES, build_tools
from sovereign_agent.skills import line_of
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrow, Setup, ToolCall

# --- Chapter 7: reading skills, finding them, loading them --------------------------

# The front matter is a mapping that holds text, lists of text and one small
# mapping (`metadata`): two levels. A third leaves room for an error that
# names the field, from the Pydantic model, instead of a bare "too deep".
MAX_YAML_DEPTH = 3
SKILL_NAME = r"^[a-z0-9]+(-[a-z0-9]+)*$"
ToolName = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[a-zA-Z0-9_-]+$")]
# A skill is instructions for one task: a few pages at most. The bound is
# checked before anything is read, so a huge file costs nothing.
MAX_SKILL_BYTES = 32_768
# Every skill's name and description is in the load_skill tool's description,
# which the model reads at every step.
MAX_SKILLS = 32
# Files and folders inside one skill folder that are checked for links out.
MAX_SKILL_ENTRIES = 1_000
SKILL_FILE = "SKILL.md"
LOAD_SKILL = "load_skill"


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
    """The skill in `folder`, one folder of the skills folder `root` (already resolved)."""
    real = os.path.realpath(folder)
    if not is_inside(real, str(root)):
        raise SkillError(folder, None, "a link that leads outside the skills folder")
    if len(folder.name) > 64 or not re.fullmatch(SKILL_NAME, folder.name):
        raise SkillError(folder, None, "a skill's folder is named like a skill: a-z, 0-9 and -")
    refuse_links_out(Path(real), str(root))
    path = folder / SKILL_FILE
    # Not following a link at the last step, and not waiting on a FIFO. Not
    # race-free: realpath is a second look at the disk, and a SKILL.md swapped
    # for a link after the walk above is resolved to wherever the link leads.
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        descriptor = os.open(os.path.realpath(path), flags)
    except FileNotFoundError:
        raise SkillError(folder, None, f"no {SKILL_FILE} in this folder") from None
    except OSError as error:
        raise SkillError(path, None, f"cannot be opened: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SkillError(path, None, "not a regular file")
        # Read one byte past the bound: a file that grew since fstat is caught too.
        data = file.read(MAX_SKILL_BYTES + 1)
    if len(data) > MAX_SKILL_BYTES:
        raise SkillError(path, None, f"larger than {MAX_SKILL_BYTES} bytes, a skill's limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkillError(path, data[: error.start].count(b"\n") + 1, "not UTF-8 text") from None
    return parse_skill(path, text)


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


def load_skill_tool(skills: Sequence[Skill]) -> ExecutableTool[SkillArguments]:
    """The tool that hands the model one skill's instructions, and narrows the run to its tools."""
    by_name = {skill.name: skill for skill in skills}
    if len(by_name) < len(skills):
        raise ValueError("two skills share a name")

    def load(arguments: SkillArguments) -> Any:
        skill = by_name[arguments.skill]
        value = {"skill": skill.name, "instructions": skill.instructions}
        if skill.allowed_tools is None:
            return value
        return Narrow(value, keep=skill.allowed_tools, reason=f"skill {skill.name}")

    return ExecutableTool(
        name=LOAD_SKILL,
        description=(
            "Load a skill: step-by-step instructions for one kind of task. Loading one can "
            "only narrow the tools of this run, to the tools the skill lists. Skills:\n"
            + skill_catalogue(skills)
        ),
        arguments=SkillArguments,
        handler=load,
    )


def build_skill_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    skills_root: str,
    allowed: Iterable[str] = (*SHOP_TOOL_NAMES, LOAD_SKILL),
    before_write: Callable[[ToolCall], None] | None = None,
    hints: bool = False,
) -> Dispatcher:
    """Lucy's shop tools and `load_skill` over the skills in `skills_root`, in one dispatcher."""
    skills = discover_skills(Path(skills_root))
    shop_tools = build_tools(shop, prices, hints=hints)
    assert shop_tools.setup is not None  # build_tools records one when it has no authority
    names = sorted(allowed)
    # The shop's own recipe (its copied rows, its prices) plus where the skills
    # are: a replay builds the same tools, and reads the skills as they are then.
    # This code reads every folder as the shop's own, and the setup says so.
    setup = Setup(
        "sovereign_agent.skills:build_skill_tools",
        {
            **shop_tools.setup.arguments,
            "skills_root": os.path.abspath(skills_root),
            "provenance": "shop",
            "allowed": names,
        },
    )
    dispatcher = Dispatcher(
        [*shop_tools.tools.values(), load_skill_tool(skills)],
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


# --- Exercise 1 (Unit A): reviewing a skills folder ----------------------------------


def review_skills(skills: Sequence[Skill], dispatcher: Dispatcher) -> list[dict[str, Any]]:
    """Exercise 1: what loading each skill would do to a run on `dispatcher`, loading none.

    One dict per skill, in the order given, with the keys "skill", "lists" (the
    sorted names it lists, or None), and "keeps", "removes", "ignores",
    "unknown" and "unreachable", each a sorted list of tool names. Unit A says
    what each one means.
    """
    raise NotImplementedError("Exercise 1: review each skill against the run's tools")


# --- Exercise 2 (Unit B): reference files, on demand ---------------------------------

READ_REFERENCE = "read_reference"
REFERENCE_NAME = r"^[a-z0-9]+(-[a-z0-9]+)*\.md$"
# A reference must fit in one observation beside its name (16,384 bytes by default).
MAX_REFERENCE_BYTES = 8_192


class ReferenceArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    skill: str = Field(min_length=1, max_length=64, pattern=SKILL_NAME)
    name: str = Field(min_length=4, max_length=64, pattern=REFERENCE_NAME)


def reference_tools(skills: Sequence[Skill]) -> tuple[ExecutableTool[Any], ...]:
    """Exercise 2: load_skill, and read_reference beside it, sharing what the run has loaded.

    As given, this is chapter 7's load_skill alone: no reference can be read.
    """
    return (load_skill_tool(skills),)


def build_reference_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    skills_root: str,
    allowed: Iterable[str] = (*SHOP_TOOL_NAMES, LOAD_SKILL, READ_REFERENCE),
) -> Dispatcher:
    """Lucy's shop tools with `reference_tools(...)` beside them: the dispatcher of the door."""
    skills = discover_skills(Path(skills_root))
    shop_tools = build_tools(shop, prices)
    return Dispatcher([*shop_tools.tools.values(), *reference_tools(skills)], allowed=allowed)


# --- Exercise 3 (Unit C): a catalogue within a budget (an open design task) ---------


def fitted_catalogue(skills: Sequence[Skill], budget: int) -> str:
    """Exercise 3: the catalogue of `skills` in at most `budget` characters, as Unit C's list says.

    The design is yours (Unit C). As given, this is chapter 7's catalogue,
    whatever its length.
    """
    return skill_catalogue(skills)


# --- The grader's door (leave this part as it is) -----------------------------------
# The grader sends and receives plain JSON. Each function below builds what it
# needs from a skills folder (the grader's own, or one your tests made), calls
# the code above, and answers in plain data: a SkillError becomes
# {"error", "path", "line"}.

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}


def _refusal(error: SkillError) -> dict[str, Any]:
    return {"error": error.reason, "path": str(error.path), "line": error.line}


def skills_in_folder(root: str) -> Any:
    """Every skill in `root` as plain data, or the refusal of the first bad one."""
    try:
        skills = discover_skills(Path(root))
    except SkillError as error:
        return _refusal(error)
    return [
        {
            "name": skill.name,
            "description": skill.description,
            "allowed_tools": None if skill.allowed_tools is None else sorted(skill.allowed_tools),
            "instructions": skill.instructions,
        }
        for skill in skills
    ]


def review_folder(root: str, allowed: list[str]) -> Any:
    """Exercise 1 through the door: the review of `root` for a run that allows `allowed`."""
    try:
        skills = discover_skills(Path(root))
        tools = build_reference_tools(SHOP, skills_root=root, allowed=allowed)
    except SkillError as error:
        return _refusal(error)
    return json.loads(json.dumps(review_skills(skills, tools)))


def catalogue_in_folder(root: str, budget: int) -> Any:
    """Exercise 3 through the door: the catalogue of the skills in `root`, within `budget`."""
    try:
        skills = discover_skills(Path(root))
    except SkillError as error:
        return _refusal(error)
    return fitted_catalogue(skills, budget)


def run_calls(root: str, allowed: list[str], calls: list[list[Any]]) -> Any:
    """A run whose model makes `calls` ([name, arguments] each), one per step, then answers."""
    try:
        tools = build_reference_tools(SHOP, skills_root=root, allowed=allowed)
    except SkillError as error:
        return _refusal(error)
    steps: list[Any] = [
        AssistantMessage(
            tool_calls=(
                AssistantToolCall(id=f"g{n}", name=name, arguments_json=json.dumps(arguments)),
            )
        )
        for n, (name, arguments) in enumerate(calls, start=1)
    ]
    model = ScriptedModel([*steps, AssistantMessage(content="done")])
    record = run_task(
        model, tools, "grader", max_steps=len(steps) + 1, max_tool_calls=len(steps) + 1
    )
    return json.loads(
        json.dumps(
            {
                "offered": [[t["function"]["name"] for t in offer] for _, offer in model.calls],
                "observations": [
                    json.loads(m.content) for m in record.messages if isinstance(m, ToolMessage)
                ],
                "narrowings": [asdict(narrowing) for narrowing in record.narrowings],
                "executed": list(record.executed),
                "refused": [list(pair) for pair in record.refused],
            }
        )
    )
