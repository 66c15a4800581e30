"""Chapter 7, as you saved it: skills that can narrow what a run may do, and never widen it.

A skill is a folder holding SKILL.md: YAML front matter (name, description,
optionally allowed-tools) and Markdown instructions. The reader keeps PyYAML's
safe loader and refuses what safe mode still allows; a Pydantic model checks
every field; every mistake names its file and line. Discovery refuses links
that lead outside the skills folder. `load_skill` tells the model each skill's
name and description and returns the instructions on demand. A handler that
returns `Narrow` narrows its run: the dispatcher works out a `Narrowing`, and
the loop scopes itself with `Dispatcher.scoped`, an intersection, for the rest
of the run. The rest of the runtime (the messages, the shop, the loop's
helpers, the recorder) comes from the book's package.
Importing this file defines things and prints nothing.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sovereign_agent.loop import (
    StopReason,
    check_setup,
    one_line,
    parse_tool_call,
)
from sovereign_agent.models import (
    Message,
    ModelClient,
    ModelError,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from sovereign_agent.shop import SHOP_TOOL_NAMES, build_tools
from sovereign_agent.tools import (
    EXPECTED_FAILURES,
    MAX_RESULT_BYTES_LIMITS,
    OBSERVATION_ENCODER,
    ArgumentProblem,
    ExecutableTool,
    Observation,
    Setup,
    ToolCall,
    ToolFailure,
    _argument_problems,
    _failed,
    _refusal,
    parameters_schema,
    safe_hints,
)
from sovereign_agent.trace import Recorder, recorder_from_env

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


@dataclass(frozen=True)
class Narrow:
    """What a handler returns to narrow the rest of its run: the value, and the names to keep.

    The model is told `value`, as from any handler. `keep` is a limit, not a
    grant: the run keeps only the names it already allowed and `keep` holds.
    `reason` is for the record: why the run narrowed.
    """

    value: Any
    keep: frozenset[str]
    reason: str

    def __post_init__(self) -> None:
        # A list or a string here would be a defect in the tool: a string would
        # narrow by its letters. Loud, instead of a scope nobody meant.
        if not isinstance(self.keep, frozenset):
            raise TypeError(f"Narrow.keep must be a frozenset, not {type(self.keep).__name__}")


@dataclass(frozen=True)
class Narrowing:
    """One narrowing of a run's tools, for the record: which call caused it, why, what it changed.

    `kept` are the names the run may still use; `removed` the ones it could
    use before and no longer can; `ignored` the names the tool asked to keep
    that the run did not allow: asked for, never granted.
    """

    call_id: str
    tool: str
    reason: str
    kept: tuple[str, ...]
    removed: tuple[str, ...]
    ignored: tuple[str, ...]


@dataclass(frozen=True)
class ToolOutcome:
    """Everything one request came to: what the model is told, and what only the operator sees.

    `observation` is exactly what `invoke` returns. `handler_ran` is True once
    the handler was entered, whatever the observation says: a handler that
    raised, or whose result was too large, still ran. `failure` is set for
    every `tool_failed`, and `argument_problems` for every `invalid_arguments`.
    `narrowing` is set when the handler returned a `Narrow`, whatever the
    model was then told: the run narrows even if the value never reached it.
    """

    observation: Observation
    handler_ran: bool
    failure: ToolFailure | None = None
    argument_problems: tuple[ArgumentProblem, ...] = ()
    narrowing: Narrowing | None = None

    @property
    def encoded(self) -> str:
        """The observation as the model receives it: JSON with sorted keys, encoded once."""
        # The first read encodes and keeps the text in the instance's own
        # __dict__ (a frozen dataclass still has one), so `attempt` measuring
        # the result and the loop answering the model share one encoding.
        # functools.cached_property does the same behind a lock that, on
        # Python 3.11, costs more than the lookup it saves.
        text: str | None = self.__dict__.get("_encoded")
        if text is None:
            text = self.__dict__["_encoded"] = OBSERVATION_ENCODER.encode(self.observation)
        return text


class Dispatcher:
    """Runs a requested tool only after every check before it has passed."""

    def __init__(
        self,
        tools: Iterable[ExecutableTool[Any]],
        *,
        allowed: Iterable[str],
        before_write: Callable[[ToolCall], None] | None = None,
        max_result_bytes: int = 16_384,
        hints: bool = False,
        setup: Setup | None = None,
    ) -> None:
        low, high = MAX_RESULT_BYTES_LIMITS
        if (
            isinstance(max_result_bytes, bool)
            or not isinstance(max_result_bytes, int)
            or not low <= max_result_bytes <= high
        ):
            raise ValueError(f"max_result_bytes must be an int from {low} to {high}")
        registry: dict[str, ExecutableTool[Any]] = {}
        for tool in tools:
            if tool.name in registry:
                # Two tools under one name leave it to chance which one runs:
                # an ambiguous configuration is refused before any request.
                raise ValueError(f"duplicate tool name: {tool.name!r}")
            registry[tool.name] = tool
        self._tools: Mapping[str, ExecutableTool[Any]] = MappingProxyType(registry)
        self._allowed: frozenset[str] = frozenset(allowed)
        # What may run: a name both allowed and registered. Neither changes after
        # construction, so it is worked out here once, not at every request.
        self._usable: frozenset[str] = self._allowed.intersection(registry)
        self._before_write = before_write
        self._max_result_bytes = max_result_bytes
        self._hints = hints
        self._setup = setup

    @property
    def tools(self) -> Mapping[str, ExecutableTool[Any]]:
        """Every registered tool, allowed or not, as a read-only mapping."""
        return self._tools

    @property
    def allowed(self) -> frozenset[str]:
        """The names this dispatcher will run; a registered name outside it is refused."""
        return self._allowed

    @property
    def has_write_authority(self) -> bool:
        """Whether a consequential tool could ever pass step 3 of `attempt`."""
        return self._before_write is not None

    @property
    def max_result_bytes(self) -> int:
        return self._max_result_bytes

    @property
    def hints(self) -> bool:
        """Whether an `invalid_arguments` observation carries safe hints."""
        return self._hints

    @property
    def setup(self) -> Setup | None:
        """How to build this dispatcher again, when whoever built it could say."""
        return self._setup

    def scoped(self, names: Iterable[str]) -> Dispatcher:
        """The same tools, authority and bounds; allowed: what this one allows and `names` holds.

        An intersection, so a scope can only narrow: a name this dispatcher
        refuses stays refused, and scoping a scoped dispatcher shrinks it again.
        It has no setup: this one's would build the wider dispatcher.
        """
        if isinstance(names, str):
            # A string is an iterable of letters: scoped("list_stock") would
            # quietly keep nothing. A mistake like that is refused instead.
            raise TypeError("scoped() takes an iterable of tool names, not one string")
        return Dispatcher(
            self._tools.values(),
            allowed=self._allowed & frozenset(names),
            before_write=self._before_write,
            max_result_bytes=self._max_result_bytes,
            hints=self._hints,
        )

    def schemas(self) -> list[dict[str, Any]]:
        """The schemas of the allowed tools, sorted by name: all a model is told exists."""
        return [self._tools[name].schema() for name in sorted(self._usable)]

    def invoke(self, call: ToolCall) -> Observation:
        """What the model is told about a request: the observation of `attempt`."""
        return self.attempt(call).observation

    def attempt(self, call: ToolCall) -> ToolOutcome:
        """Check a request in a fixed order, run it if every check passed, and report what happened.

        Nothing after a refusal runs. The outcome's observation is safe for the
        model; the rest of it (did the handler run, what failed) is for the operator.
        """
        # 1. One answer for "unknown" and "not allowed", so a refusal does not
        #    tell a probing model which forbidden names exist. What may run is
        #    what `schemas` offers: a name both allowed and registered.
        if call.name not in self._usable:
            return ToolOutcome(_refusal("tool_not_allowed"), handler_ran=False)
        tool = self._tools[call.name]
        # 2. Strict validation: no coercion of "6" or True or 6.0 into 6.
        try:
            arguments = tool.arguments.model_validate(call.arguments, strict=True)
        except ValidationError as error:
            problems = _argument_problems(error)
            refusal = _refusal("invalid_arguments")
            if self._hints:
                # Built from the schema the model was already shown: a hint tells
                # it nothing it was not told, and repeats nothing it sent.
                refusal["hints"] = safe_hints(parameters_schema(tool.arguments), problems)
            return ToolOutcome(refusal, handler_ran=False, argument_problems=problems)
        # 3. A consequential tool with nobody to authorise it never runs.
        if tool.consequential and self._before_write is None:
            return ToolOutcome(_refusal("write_authority_required"), handler_ran=False)
        # 4. The authority may refuse by raising; only then the handler.
        if tool.consequential and self._before_write is not None:
            try:
                self._before_write(call)
            except EXPECTED_FAILURES as error:
                return _failed("before_write", error, handler_ran=False)
        try:
            value = tool.handler(arguments)
        except EXPECTED_FAILURES as error:
            return _failed("handler", error, handler_ran=True)
        narrowing = None
        if isinstance(value, Narrow):
            # The handler asks to narrow the rest of its run. What that keeps,
            # removes and asked for in vain is decided here, against what this
            # dispatcher runs: naming a tool in `keep` never makes it allowed.
            usable = self._usable
            narrowing = Narrowing(
                call_id=call.id,
                tool=call.name,
                reason=value.reason,
                kept=tuple(sorted(usable & value.keep)),
                removed=tuple(sorted(usable - value.keep)),
                ignored=tuple(sorted(value.keep - usable)),
            )
            value = value.value
        # 5. Bound what goes back into the model's context. The handler has
        #    already run by now: this refusal hides a result, it undoes nothing
        #    (and a narrowing the handler asked for still holds).
        #    The encoder escapes every non-ASCII character, so the length of
        #    `encoded` in characters is its size in bytes. It is the very text
        #    the loop sends, so a value whose keys cannot be sorted ({1: "a", "b": 2})
        #    fails here, as the tool's failure, not later inside the loop.
        outcome = ToolOutcome({"ok": True, "value": value}, handler_ran=True, narrowing=narrowing)
        try:
            size = len(outcome.encoded)
        except EXPECTED_FAILURES as error:
            return replace(_failed("result", error, handler_ran=True), narrowing=narrowing)
        if size > self._max_result_bytes:
            return ToolOutcome(_refusal("result_too_large"), handler_ran=True, narrowing=narrowing)
        return outcome


class RunRecord(BaseModel):
    """Everything one run did, frozen once the run is over."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stop_reason: StopReason
    answer: str | None
    error: str | None
    steps: int
    messages: tuple[Message, ...]
    requested: tuple[str, ...]
    executed: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]
    narrowings: tuple[Narrowing, ...] = ()


def run_task(
    model: ModelClient,
    dispatcher: Dispatcher,
    task: str,
    *,
    max_steps: int,
    max_tool_calls: int,
    system: str | None = None,
    recorder: Recorder | None = None,
) -> RunRecord:
    """Let the model work on one task, inside bounds the runtime set and enforces.

    Everything the run does is told to `recorder`; without one, to a recorder
    for the file SOVEREIGN_TRACE names, which records nothing when it is unset.
    A tool may narrow the run's tools for the rest of it; nothing widens them.
    """
    check_setup(dispatcher, max_steps=max_steps, max_tool_calls=max_tool_calls)
    trace = recorder_from_env() if recorder is None else recorder
    messages: list[Message] = [] if system is None else [SystemMessage(content=system)]
    messages.append(UserMessage(content=task))
    trace.run_started(
        model, dispatcher, task, system=system, max_steps=max_steps, max_tool_calls=max_tool_calls
    )
    requested: list[str] = []
    executed: list[str] = []
    refused: list[tuple[str, str]] = []
    narrowings: list[Narrowing] = []
    answered_ids: set[str] = set()
    steps = 0
    dispatched = 0

    def finish(
        reason: StopReason, answer: str | None = None, error: str | None = None
    ) -> RunRecord:
        record = RunRecord(
            stop_reason=reason,
            answer=answer,
            error=error,
            steps=steps,
            messages=tuple(messages),
            requested=tuple(requested),
            executed=tuple(executed),
            refused=tuple(refused),
            narrowings=tuple(narrowings),
        )
        trace.run_finished(record)
        return record

    while True:
        steps += 1
        # The tools on offer are asked for at every step, not once: what a
        # run may use can narrow while it runs.
        tools = dispatcher.schemas()
        trace.model_request(messages, tools)
        try:
            reply = model.complete(tuple(messages), tools=tools)
        except ModelError as error:
            return finish(StopReason.MODEL_ERROR, error=one_line(error))
        trace.model_reply(reply)
        messages.append(reply.message)
        calls = reply.message.tool_calls
        if not calls:
            return finish(StopReason.FINAL_ANSWER, answer=reply.message.content)
        ids = [raw.id for raw in calls]
        if len(set(ids)) < len(ids) or not answered_ids.isdisjoint(ids):
            # One id, two answers: no provider accepts that transcript, and no
            # one could tell which answer belongs to which call. Nothing in
            # this reply runs, and the run ends here.
            requested.extend(raw.name for raw in calls)
            refused.extend((raw.name, "duplicate_call_id") for raw in calls)
            return finish(StopReason.DUPLICATE_CALL_ID)
        answered_ids.update(ids)
        # The model gets no step after this one, so nothing it asks for now
        # would ever be read: answer each call with a refusal instead of running it.
        stop = StopReason.STEP_LIMIT if steps == max_steps else None
        for raw in calls:
            requested.append(raw.name)
            trace.tool_call(raw)
            call = parse_tool_call(raw)
            refusal: str | None = None
            if call is None:
                # A fixed code: the model's own malformed text is never echoed back.
                refusal = "malformed_tool_call"
            elif stop is StopReason.STEP_LIMIT:
                refusal = "step_limit"
            elif dispatched == max_tool_calls:
                # The budget is spent mid-turn: the rest of this turn is refused,
                # and the model is not asked again.
                refusal = "tool_call_limit"
                stop = StopReason.TOOL_CALL_LIMIT
            if call is None or refusal is not None:
                # Stopped by the loop itself: nothing ran, and the model gets a code.
                outcome = ToolOutcome({"ok": False, "error": refusal}, handler_ran=False)
            else:
                dispatched += 1
                outcome = dispatcher.attempt(call)
            trace.tool_outcome(raw, outcome)
            if outcome.narrowing is not None:
                # From the next call on, the run has only what was kept; scoped()
                # intersects, so no tool can widen the run by asking to.
                dispatcher = dispatcher.scoped(outcome.narrowing.kept)
                narrowings.append(outcome.narrowing)
                trace.scope_narrowed(outcome.narrowing)
            # A call whose handler ran is executed, whatever the model was told:
            # a handler that failed, or whose result was too large, still ran.
            if outcome.handler_ran:
                executed.append(raw.name)
            else:
                refused.append((raw.name, str(outcome.observation["error"])))
            # Every call is answered, in the model's order, under its own id:
            # a provider rejects a transcript with an unanswered call. The text
            # is the outcome's own encoding, made once (`attempt` measured it).
            messages.append(ToolMessage(tool_call_id=raw.id, content=outcome.encoded))
        if stop is not None:
            return finish(stop)


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
