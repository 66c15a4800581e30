"""Partly printed, in chapter 9: an MCP server's tools, joined only as the shop declares them.

A remote server is untrusted twice over: its text (names, descriptions,
results) was written by somebody else, and so was its behaviour (it may hang,
die, flood, lie about ids, or change a tool after the shop has looked at it).
So a remote tool joins a run only through a declaration of the shop's
(`Declared`): the shop's name for it, the shop's argument model, the shop's
description, and whether it is consequential. At connection the server's
advertised input schema must be the declared model's schema exactly (chapter
4's fingerprint), or the tool is refused (`schema_mismatch`); a tool the shop
did not declare joins nothing (`undeclared`). The model is only ever shown the
shop's description.

The runtime's loop is synchronous and the SDK is async. One background thread
runs an event loop that owns the stdio process and the `ClientSession` for the
whole connection; a call is submitted to that loop and waited for with a
timeout. Whatever goes wrong remotely (an error result, a result that is not
what MCP promises, no answer in time, a line that is not JSON-RPC, a server
that died) reaches the dispatcher as an expected failure, so the model sees
chapter 2's `tool_failed` and the trace keeps the detail. After a line that
is not JSON-RPC the connection is treated as broken for good: a server that
does not speak the protocol cannot be trusted to answer the next call either.

When the server says its tool list changed, the list is fetched again and
every joined tool whose description or schema differs from what was checked
at connection (or that vanished) is lost for the rest of the run: its handler
refuses to call it, and the next remote call's result carries a `Narrow` so
the loop removes it from what the model is offered (reason `tool_changed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import Any, Generic, Literal, TextIO, TypeVar, cast

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from pydantic import BaseModel

from sovereign_agent.effects import Effect, classes_of_consequential
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrow, parameters_schema
from sovereign_agent.toolsets import JoinedTools, Toolset, combined_dispatcher
from sovereign_agent.trace.format import schema_fingerprint

__all__ = [
    "Advertised",
    "Declared",
    "Refusal",
    "RefusalReason",
    "RemoteFailure",
    "RemoteTools",
    "advertised_fingerprint",
    "connect",
    "dispatcher_with_remote",
    "match_tools",
    "schema_matches",
]

RefusalReason = Literal["schema_mismatch", "undeclared", "not_advertised", "advertised_twice"]

TOOL_CHANGED = "tool_changed"

# A server's listing is read page by page; a server that keeps handing out
# cursors, or thousands of tools, is cut off instead of read forever.
MAX_LIST_PAGES = 10
MAX_ADVERTISED_TOOLS = 1_000

# How long the sync side waits beyond a call's own timeout for the loop
# thread to report back; only a wedged loop ever uses it up.
_GRACE_SECONDS = 5.0

T = TypeVar("T")


class RemoteFailure(ConnectionError):
    """A remote call that came to nothing: the message is the operator's detail.

    A `ConnectionError` is an `OSError`, one of chapter 2's expected failures:
    the dispatcher turns it into `tool_failed` and keeps the message for the trace.
    """


@dataclass(frozen=True)
class Declared:
    """The shop's word for one remote tool: all the model is told, and all the dispatcher checks.

    `name` is what the model calls; `remote` the tool's name on the server, when
    it differs. `description` is the shop's, never the server's.
    """

    name: str
    arguments: type[BaseModel]
    description: str
    consequential: bool = False
    remote: str | None = None

    @property
    def remote_name(self) -> str:
        return self.name if self.remote is None else self.remote


@dataclass(frozen=True)
class Advertised:
    """One tool as a server lists it: its name, its description and its input schema, untrusted."""

    name: str
    description: str | None
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class Refusal:
    """A tool that did not join, and why: for the operator, never for the model."""

    name: str
    reason: RefusalReason


def schema_matches(model: type[BaseModel], advertised: Mapping[str, Any]) -> bool:
    """Whether a server's schema is the declared model's: one fingerprint, key order aside."""
    try:
        return schema_fingerprint(parameters_schema(model)) == schema_fingerprint(advertised)
    except (TypeError, ValueError):
        # Not JSON at all (a set, a NaN): it cannot be the model's schema.
        return False


def advertised_fingerprint(tool: Advertised) -> str:
    """One name for everything a server says about a tool: change a word or a key, it changes."""
    return schema_fingerprint(
        {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
    )


def match_tools(
    declarations: Iterable[Declared], advertised: Iterable[Advertised]
) -> tuple[tuple[Declared, ...], tuple[Refusal, ...]]:
    """Which declared tools join, and a refusal for every other tool on either side.

    A declared tool joins when the server advertises it once, with a schema
    that matches. Everything the server offers beyond the declarations is
    refused as `undeclared`; a declaration the server does not offer is
    refused as `not_advertised`; a name advertised twice is ambiguous and
    refused whichever copy would have matched.
    """
    offered: dict[str, list[Advertised]] = {}
    for tool in advertised:
        offered.setdefault(tool.name, []).append(tool)
    joined: list[Declared] = []
    refused: list[Refusal] = []
    declared_remote: set[str] = set()
    for declaration in declarations:
        remote = declaration.remote_name
        declared_remote.add(remote)
        copies = offered.get(remote, [])
        if not copies:
            refused.append(Refusal(declaration.name, "not_advertised"))
        elif len(copies) > 1:
            refused.append(Refusal(declaration.name, "advertised_twice"))
        elif not schema_matches(declaration.arguments, copies[0].input_schema):
            refused.append(Refusal(declaration.name, "schema_mismatch"))
        else:
            joined.append(declaration)
    refused.extend(Refusal(name, "undeclared") for name in offered if name not in declared_remote)
    return tuple(joined), tuple(refused)


def _value_of(result: types.CallToolResult) -> Any:
    """What a call result tells the model: its structured content, else its text; else a failure."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if result.is_error:
        detail = " ".join(" ".join(texts).split())[:200]
        raise RemoteFailure(f"the server reported an error: {detail}")
    if result.structured_content is not None:
        return result.structured_content
    if len(texts) != len(result.content) or not texts:
        # Images, audio, links: nothing the shop's loop can show as an observation.
        kinds = sorted({type(block).__name__ for block in result.content}) or ["nothing"]
        raise RemoteFailure(f"the result holds {', '.join(kinds)}, not text")
    return "".join(texts)


def _advertised(listing: Iterable[types.Tool]) -> list[Advertised]:
    return [Advertised(tool.name, tool.description, tool.input_schema) for tool in listing]


class RemoteTools:
    """The joined tools of one MCP server over stdio: a `Toolset`, and the connection behind it.

    Open it with `connect` (a context manager); closing it ends the session,
    stops the server process and joins the thread. `refused` says which tools
    did not join and why; `lost` which joined tools a change on the server
    took away.
    """

    def __init__(
        self,
        command: Sequence[str],
        declarations: Iterable[Declared],
        *,
        source: str,
        call_timeout: float = 10.0,
        connect_timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        if not command:
            raise ValueError("a remote server needs a command to start it")
        for name, value in (("call_timeout", call_timeout), ("connect_timeout", connect_timeout)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        self._declarations = tuple(declarations)
        names = [declaration.name for declaration in self._declarations]
        if len(set(names)) < len(names):
            raise ValueError(f"a tool is declared twice for {source!r}")
        self._source = source
        self._parameters = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=None if env is None else dict(env)
        )
        self._call_timeout = float(call_timeout)
        self._connect_timeout = float(connect_timeout)
        self._errlog = sys.stderr if errlog is None else errlog
        self._tools: Mapping[str, ExecutableTool[Any]] = MappingProxyType({})
        self._refused: tuple[Refusal, ...] = ()
        self._checked: dict[str, str] = {}
        self._lost: set[str] = set()
        self._reported: set[str] = set()
        self._run_names: frozenset[str] | None = None
        # Set from the loop thread, read from the caller's: threading primitives.
        self._changed = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: ClientSession | None = None
        # Calls under way on the loop, so a broken connection can end them at once.
        self._inflight: set[asyncio.Task[Any]] = set()
        self._closing: asyncio.Event | None = None
        self._listing: list[Advertised] = []
        self._thread = threading.Thread(target=self._serve, name=f"mcp {source}", daemon=True)

    # --- the Toolset the dispatcher joins -------------------------------------------

    @property
    def source(self) -> str:
        return self._source

    @property
    def tools(self) -> Mapping[str, ExecutableTool[Any]]:
        return self._tools

    @property
    def refused(self) -> tuple[Refusal, ...]:
        return self._refused

    @property
    def lost(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._lost)

    def share_run(self, names: Iterable[str]) -> None:
        """Every tool name of the run this toolset joined, so a narrowing keeps the others."""
        self._run_names = frozenset(names)

    # --- opening and closing -------------------------------------------------------

    def open(self) -> RemoteTools:
        """Start the server, check its tools against the declarations, and join those that match."""
        self._thread.start()
        if not self._ready.wait(self._connect_timeout + _GRACE_SECONDS):
            self.close()
            raise RemoteFailure(f"{self._source}: no connection within {self._connect_timeout} s")
        if self._broken is not None:
            reason = self._broken
            self.close()
            raise RemoteFailure(f"{self._source}: {reason}")
        joined, refused = match_tools(self._declarations, self._listing)
        by_remote = {tool.name: tool for tool in self._listing}
        self._checked = {
            declaration.name: advertised_fingerprint(by_remote[declaration.remote_name])
            for declaration in joined
        }
        self._refused = refused
        self._tools = MappingProxyType(
            {declaration.name: self._executable(declaration) for declaration in joined}
        )
        return self

    def close(self) -> None:
        """End the session and the server process; safe to call twice."""
        loop, closing = self._loop, self._closing
        if loop is not None and closing is not None and not loop.is_closed():
            # RuntimeError: the loop stopped on its own, the server died.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(closing.set)
        if self._thread.is_alive():
            # The SDK's transport closes stdin, waits a moment, then kills the
            # process tree, and reaps it: bounded, so a join this long suffices.
            self._thread.join(self._connect_timeout + _GRACE_SECONDS)

    def __enter__(self) -> RemoteTools:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- the loop thread -----------------------------------------------------------

    def _serve(self) -> None:
        try:
            anyio.run(self._connection)
        except BaseException as error:  # the thread must report, never die silently
            self._break(f"the connection ended: {_describe(error)}")
        finally:
            self._break("the connection is closed")
            self._ready.set()

    async def _connection(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._closing = asyncio.Event()
        try:
            async with (
                stdio_client(self._parameters, errlog=self._errlog) as (read, write),
                ClientSession(read, write, message_handler=self._on_message) as session,
            ):
                with anyio.fail_after(self._connect_timeout):
                    await session.initialize()
                    self._listing = _advertised(await self._list(session))
                self._session = session
                self._ready.set()
                await self._closing.wait()
        except Exception as error:
            # The first reason is the one kept: say what ended the connection
            # before `finally` says only that it ended.
            self._break(f"the connection ended: {_describe(error)}")
            raise
        finally:
            self._session = None
            self._break("the connection is closed")

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            # A line that is not JSON-RPC: the server no longer speaks the protocol.
            self._break(f"the server sent something that is not JSON-RPC: {_describe(message)}")
        elif isinstance(message, types.ToolListChangedNotification):
            self._changed.set()

    def _break(self, reason: str) -> None:
        with self._lock:
            if self._broken is None:
                self._broken = reason
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # RuntimeError: the loop is already gone, and so is every call on it.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._cancel_inflight)

    @staticmethod
    async def _list(session: ClientSession) -> list[types.Tool]:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            if len(tools) > MAX_ADVERTISED_TOOLS:
                raise RemoteFailure(f"the server lists more than {MAX_ADVERTISED_TOOLS} tools")
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise RemoteFailure(f"the server's tool list runs past {MAX_LIST_PAGES} pages")

    def _start(self, work: Coroutine[Any, Any, T], call: _Call[T], timeout: float) -> None:
        """On the loop: run `work` as a task of its own, which reports to `call` when it ends.

        One task per call, nothing wrapped around it but the report: this is
        the per-call work of the crossing, so it is kept to what the checks
        need. The task reports in the step that ends it, so the caller is
        released a turn of the loop sooner than by a done callback (which is
        kept only for a task cancelled before its first step); the caller's
        own wait is the timeout (`_submit`), so no timer is set either.
        `_break` cancels the task if the connection breaks meanwhile.
        """
        if self._broken is not None:
            work.close()
            call.fail(RemoteFailure(self._broken))
            return
        task = asyncio.get_running_loop().create_task(self._answer(work, call, timeout))
        call.task = task
        self._inflight.add(task)

        def unstarted(task: asyncio.Task[None]) -> None:
            # A task cancelled before its first step never ran `_answer`: it
            # reports here instead, and closes `work`, which never started.
            if not call.reported:
                work.close()
                self._inflight.discard(task)
                call.fail(self._cancelled(call, timeout))

        task.add_done_callback(unstarted)

    def _cancelled(self, call: _Call[Any], timeout: float) -> Exception:
        """Why a call was cancelled: its time ran out, the connection broke, or the loop ended."""
        if call.expired:
            return TimeoutError(f"no answer within {timeout} s")
        if self._broken is not None:
            return RemoteFailure(self._broken)
        return RemoteFailure("the call was cancelled")

    async def _answer(self, work: Coroutine[Any, Any, T], call: _Call[T], timeout: float) -> None:
        """The task of one call: `work`, awaited, and its end reported to the caller once."""
        try:
            value = await work
        except asyncio.CancelledError:
            call.fail(self._cancelled(call, timeout))
            raise
        except Exception as error:
            # The SDK's own errors: reported, and so retrieved; the task itself ends well.
            call.fail(error)
        except BaseException as error:
            # KeyboardInterrupt, SystemExit: the caller hears of it, and the loop still sees it.
            call.fail(error)
            raise
        else:
            call.succeed(value)
        finally:
            self._inflight.discard(call.task)

    def _cancel_inflight(self) -> None:
        for task in tuple(self._inflight):
            task.cancel()

    def _submit(self, make: Callable[[ClientSession], Coroutine[Any, Any, T]], timeout: float) -> T:
        """Run `make(session)` on the loop thread and wait for it, for at most `timeout`.

        The caller waits on one lock the loop releases, rather than on a
        `concurrent.futures.Future` (a condition, its own lock, callbacks):
        the crossing is paid on every remote call, so it carries nothing extra.
        """
        loop, session = self._loop, self._session
        if self._broken is not None:
            raise RemoteFailure(self._broken)
        if loop is None or session is None or loop.is_closed():
            raise RemoteFailure("the connection is closed")
        call: _Call[T] = _Call()
        work = make(session)
        try:
            loop.call_soon_threadsafe(self._start, work, call, timeout)
        except RuntimeError:
            # The loop closed between the check above and now: the server is gone.
            work.close()
            raise RemoteFailure(self._broken or "the connection is closed") from None
        if not call.done.acquire(timeout=timeout):
            # Time is up: the loop cancels the call, whose task then reports the timeout
            # (or its answer, had it come meanwhile). Only a wedged loop says nothing.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(call.expire)
            if not call.done.acquire(timeout=_GRACE_SECONDS):
                raise TimeoutError(f"the connection did not answer within {timeout} s")
        if call.error is None:
            # `succeed` stored the value before releasing `done`.
            return cast(T, call.value)
        if isinstance(call.error, RemoteFailure | TimeoutError):
            raise call.error
        # The SDK's own errors (an error response, a result that does not
        # validate, a closed stream) carry the operator's detail.
        raise RemoteFailure(_describe(call.error)) from call.error

    # --- calls --------------------------------------------------------------------

    def _executable(self, declaration: Declared) -> ExecutableTool[Any]:
        def handler(arguments: BaseModel) -> Any:
            return self._call(declaration, arguments)

        return ExecutableTool(
            name=declaration.name,
            description=declaration.description,
            arguments=declaration.arguments,
            handler=handler,
            # Whatever it is declared to do, a remote tool sends its arguments out
            # of the shop: egress is a fact of where it runs, not the shop's choice.
            effects=classes_of_consequential(declaration.consequential) | {Effect.EGRESS},
        )

    def _call(self, declaration: Declared, arguments: BaseModel) -> Any:
        # Checked before the call as well as after: a tool that changed while
        # nobody was calling must not run once under its new terms.
        self._notice_changes()
        # `_lost` only ever grows, and a set's membership test is atomic: no lock to read it.
        if declaration.name in self._lost:
            raise PermissionError(f"{declaration.name!r} changed on the server during this run")
        payload = arguments.model_dump(mode="json")
        remote_name = declaration.remote_name
        result = self._submit(
            lambda session: session.call_tool(remote_name, payload), self._call_timeout
        )
        value = _value_of(result)
        self._notice_changes()
        if not self._lost:
            return value
        with self._lock:
            unreported = self._lost - self._reported
            self._reported |= unreported
        if unreported:
            return Narrow(value, keep=self._keep(), reason=TOOL_CHANGED)
        return value

    def _keep(self) -> frozenset[str]:
        # Without the run's names only this server's tools are known: keeping
        # just those would narrow more than needed, never less.
        names = self._tools.keys() if self._run_names is None else self._run_names
        return frozenset(names) - self.lost

    def _notice_changes(self) -> None:
        if not self._changed.is_set():
            return
        self._changed.clear()
        try:
            listing = _advertised(self._submit(self._list, self._call_timeout))
        except (RemoteFailure, TimeoutError):
            # No fresh list, no knowing what changed: every joined tool is lost.
            with self._lock:
                self._lost |= self._tools.keys()
            return
        now: dict[str, list[Advertised]] = {}
        for tool in listing:
            now.setdefault(tool.name, []).append(tool)
        changed = set()
        for declaration in self._declarations:
            checked = self._checked.get(declaration.name)
            copies = now.get(declaration.remote_name, [])
            if checked is not None and (
                len(copies) != 1 or advertised_fingerprint(copies[0]) != checked
            ):
                changed.add(declaration.name)
        with self._lock:
            self._lost |= changed


class _Call(Generic[T]):
    """One call handed to the loop thread: the lock its caller waits on, and its outcome."""

    __slots__ = ("done", "error", "expired", "reported", "task", "value")

    def __init__(self) -> None:
        self.done = threading.Lock()
        self.done.acquire()
        self.value: T | None = None
        self.error: BaseException | None = None
        self.expired = False
        # Set, on the loop thread only, by the one report the caller gets.
        self.reported = False
        self.task: asyncio.Task[None] | None = None

    def succeed(self, value: T) -> None:
        self.reported = True
        self.value = value
        self.done.release()

    def fail(self, error: BaseException) -> None:
        self.reported = True
        self.error = error
        self.done.release()

    def expire(self) -> None:
        """On the loop: the call's time is up; its task, if still running, is cancelled.

        The SDK then abandons the request and tells the server it was
        cancelled, as it does for any cancellation. `_start` always runs
        first: the caller queues it before it starts waiting.
        """
        if self.task is not None and not self.task.done():
            self.expired = True
            self.task.cancel()


def _describe(error: BaseException) -> str:
    """An error as one short line for the operator: its class, then its message."""
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return _describe(error.exceptions[0])
    text = " ".join(str(error).split())[:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def connect(
    command: Sequence[str],
    declarations: Iterable[Declared],
    *,
    source: str,
    call_timeout: float = 10.0,
    connect_timeout: float = 30.0,
    env: Mapping[str, str] | None = None,
    errlog: TextIO | None = None,
) -> RemoteTools:
    """Start an MCP server over stdio and join the tools the shop declared; close it when done."""
    return RemoteTools(
        command,
        declarations,
        source=source,
        call_timeout=call_timeout,
        connect_timeout=connect_timeout,
        env=env,
        errlog=errlog,
    ).open()


def dispatcher_with_remote(
    toolsets: Iterable[Toolset], *, allowed: Iterable[str], **options: Any
) -> tuple[Dispatcher, JoinedTools]:
    """`combined_dispatcher`; each remote toolset is then told the run's names, for narrowings."""
    toolsets = tuple(toolsets)
    dispatcher, joined = combined_dispatcher(toolsets, allowed=allowed, **options)
    for toolset in toolsets:
        if isinstance(toolset, RemoteTools):
            toolset.share_run(joined.sources.keys())
    return dispatcher, joined
