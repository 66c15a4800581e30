"""Support the book does not print: a remote server's calls answered from the trace, for replay.

A run that joined a remote server's tools (chapter 9) is replayed without
the server: it may be gone, changed, or somebody else's. The shop's local
tools run against today's code, as in every replay; each remote tool is
built again from today's declaration (`setups.KNOWN_REMOTE_SOURCES`), so the
dispatcher's checks and the schema fingerprint the model is offered are
today's, and only its handler is replaced by one that answers with the
outcome the trace recorded for that tool's next call.

So a replay re-checks the shop's side of a remote call (the declaration's
schema, the allowlist, the argument checks, what the loop does with the
answer) and cannot re-check the server's side: a recorded answer is
repeated, never asked for again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from sovereign_agent.effects import Effect, classes_of_consequential
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrow
from sovereign_agent.trace.format import (
    ModelRequestEvent,
    RecordedRun,
    ScopeNarrowedEvent,
    ToolOutcomeEvent,
)
from sovereign_agent.trace.setups import ReplaySetupError, remote_declarations

__all__ = ["RecordedRemoteFailure", "remote_sources", "with_recorded_remote"]


class RecordedRemoteFailure(ConnectionError):
    """A recorded remote failure of a type replay does not raise again: the replay diverges."""


def _raised(exception_type: str) -> Callable[[str], Exception]:
    """The exception a replayed remote handler raises for a recorded failure of this type.

    The types a remote tool's handler raises (`RemoteFailure`, `PermissionError`
    for a tool the server changed, `TimeoutError`), so the dispatcher records the
    same type again; any other is answered with RecordedRemoteFailure, and the
    comparison of `exception.type` says so.
    """
    # Imported here: only a run that joined remote tools needs the MCP client.
    from sovereign_agent.mcp.remote import RemoteFailure

    known: dict[str, Callable[[str], Exception]] = {
        "RemoteFailure": RemoteFailure,
        "PermissionError": PermissionError,
        "TimeoutError": TimeoutError,
    }
    return known.get(exception_type, RecordedRemoteFailure)


def remote_sources(run: RecordedRun) -> list[str]:
    """The remote sources (`mcp:...`) the run's recorded calls went to, in first-call order."""
    found: list[str] = []
    for event in run.events:
        source = getattr(event, "source", None)
        if isinstance(source, str) and source.startswith("mcp:") and source not in found:
            found.append(source)
    return found


def _answers(run: RecordedRun, name: str) -> deque[Callable[[], Any]]:
    """What each recorded run of `name`'s handler came to, in order, as a thunk to replay."""
    answers: deque[Callable[[], Any]] = deque()
    events = run.events
    for index, event in enumerate(events):
        if not isinstance(event, ToolOutcomeEvent) or event.tool_name != name:
            continue
        if not event.handler_ran:
            continue  # Refused before the handler: today's checks decide that again.
        answers.append(_answer(event, events[index + 1] if index + 1 < len(events) else None))
    return answers


def _answer(outcome: ToolOutcomeEvent, after: object) -> Callable[[], Any]:
    if outcome.failure_stage == "handler" and outcome.exception_type is not None:
        raise_as = _raised(outcome.exception_type)
        message = outcome.exception_message or ""

        def failed() -> Any:
            raise raise_as(message)

        return failed
    value = outcome.observation.get("value")
    if isinstance(after, ScopeNarrowedEvent) and after.call_id == outcome.call_id:
        # The server changed a tool mid-run: the recorded narrowing is asked
        # for again, and today's loop decides what it keeps.
        keep = frozenset(after.kept) | frozenset(after.ignored)
        reason = after.reason
        return lambda: Narrow(value, keep=keep, reason=reason)
    return lambda: value


def _recorded_tool(declaration: Any, answers: deque[Callable[[], Any]]) -> ExecutableTool[Any]:
    """Today's declaration of a remote tool, with a handler that repeats the recorded answers."""
    name = declaration.name

    def handler(arguments: Any) -> Any:
        if not answers:
            raise RecordedRemoteFailure(f"the trace records no further answer from {name!r}")
        return answers.popleft()()

    return ExecutableTool(
        name=name,
        description=declaration.description,
        arguments=declaration.arguments,
        handler=handler,
        # Whatever it is declared to do, a remote tool sends its arguments out
        # of the shop: egress is a fact of where it runs, not the shop's choice.
        effects=classes_of_consequential(declaration.consequential) | {Effect.EGRESS},
    )


def with_recorded_remote(run: RecordedRun, local: Dispatcher) -> tuple[Dispatcher, dict[str, str]]:
    """`local` with each remote source's declared tools added, answering from the trace.

    Returns the dispatcher and the source of every tool it holds, for the
    replay's recorder. A remote tool is added when the recorded run offered
    it: one the server did not match at connection was never offered, and
    must not be now. Raises ReplaySetupError for a source replay does not know.
    """
    offered: set[str] = set()
    for event in run.events:
        if isinstance(event, ModelRequestEvent):
            offered |= event.tools.keys()
    recorded_sources: dict[str, str] = {}
    for event in run.events:
        source = getattr(event, "source", None)
        name = getattr(event, "tool_name", None)
        if isinstance(source, str) and isinstance(name, str):
            recorded_sources.setdefault(name, source)
    # A local tool keeps the label it was recorded under: which source a local
    # tool belongs to is the caller's word, and only a remote one is rebuilt here.
    sources = {name: recorded_sources[name] for name in local.tools if name in recorded_sources}
    remote = remote_sources(run)
    if not remote:
        return local, sources
    if local.has_write_authority:
        # The authority is code the setup holds and no dispatcher hands out:
        # rebuilding without it would refuse what the recorded run let through.
        raise ReplaySetupError(
            "the setup's dispatcher has a write authority, which replay cannot carry over "
            "when it adds the recorded remote tools; build them without one"
        )
    tools = list(local.tools.values())
    allowed = set(local.allowed)
    for source in remote:
        for declaration in remote_declarations(source):
            if declaration.name not in offered or declaration.name in local.tools:
                continue
            tools.append(_recorded_tool(declaration, _answers(run, declaration.name)))
            allowed.add(declaration.name)
            sources[declaration.name] = source
    try:
        dispatcher = Dispatcher(
            tools, allowed=allowed, max_result_bytes=local.max_result_bytes, hints=local.hints
        )
    except ValueError as error:
        raise ReplaySetupError(f"the setup could not build the tools: {error}") from None
    return dispatcher, sources
