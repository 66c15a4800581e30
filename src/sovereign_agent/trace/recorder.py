"""Support the book does not print: the recorder `run_task` talks to, and where its events go.

`run_task` tells its recorder six things, in the loop's order: a run started,
the model is asked, the model replied, a call is taken up, a call's outcome,
the run finished; and a seventh when a call narrowed the run's tools. Calls
run side by side (chapter 13) are all taken up before any outcome is told,
and the dispatcher says when each one's answer was ready (`tool_answered`),
so that each outcome carries its own call's duration. The
recorder turns each into one event (see `format.py`) and hands it to a sink:
a trace file, a list, or the replay's comparison.
Without a sink it returns at once, so a run nobody traces pays next to nothing.

`SOVEREIGN_TRACE=path.jsonl` gives every run a sink that appends to that file,
one line per event (see `JsonLinesFile` for when the lines reach the disk).
What a trace must never hold is an API key. The value of any variable named
`*_API_KEY`, `*_TOKEN`, `*_SECRET` or `*_PASSWORD` is hidden by the rule the
model clients use (`sovereign_agent.redaction`): no six characters in a row of
it, in any letter case, nor its first or last four, are written. And since a
provider's error text may quote a key in ways no rule foresees, only a model
error's class is written, never its words.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pydantic_core

from sovereign_agent.effects import Effect
from sovereign_agent.models import AssistantToolCall, Message, ModelClient, ModelReply
from sovereign_agent.redaction import MIN_FRAGMENT, piece_search, secret_pieces, utf8_piece_search
from sovereign_agent.redaction import redact as redact_text
from sovereign_agent.tools import Dispatcher, ExecutableTool, Narrowing, Setup, ToolOutcome
from sovereign_agent.trace.format import FORMAT_VERSION, schema_fingerprint

__all__ = [
    "TRACE_VARIABLE",
    "FinishedRun",
    "JsonLinesFile",
    "Recorder",
    "Sink",
    "TraceWriteError",
    "encode_event",
    "recorder_from_env",
]

TRACE_VARIABLE = "SOVEREIGN_TRACE"
# A key is redacted by the clients' rule (`sovereign_agent.redaction`): any run
# of this many of its characters, and its ends. A variable's value shorter than
# this is not taken for a key: masking "true" or "1" everywhere garbles a trace.
# A provider's error text is never written at all: it may quote a key in ways
# no rule foresees.
MIN_SECRET_FRAGMENT = MIN_FRAGMENT
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
# The longest a trace file may lag behind a run that is waiting on its model.
WRITE_EVERY_S = 1.0
# How many values a sink remembers as clean of its keys, or not (`known_clean`).
_CLEAN_KEPT = 256
_CLEAN_LONGEST = 65_536

Sink = Callable[[dict[str, Any]], None]


class FinishedRun(Protocol):
    """What the recorder reads from a finished run: the fields `RunRecord` has.

    A protocol, not the loop's class: the loop imports this module to tell it
    what happens, so this module importing the loop, even for an annotation,
    would make the two depend on each other. The recorder sits below the loop.
    """

    @property
    def stop_reason(self) -> str: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def steps(self) -> int: ...
    @property
    def requested(self) -> Sequence[str]: ...
    @property
    def executed(self) -> Sequence[str]: ...
    @property
    def refused(self) -> Sequence[tuple[str, str]]: ...


class TraceWriteError(Exception):
    """The trace could not be written: a run is never traced in part without saying so."""


def secrets_from_env(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The values of variables that by their names hold keys, long enough to be one.

    Names are matched as the convention writes them, in capitals.
    """
    # Names first, values only for the few that match: decoding every value of
    # the environment for every run would cost a noticeable part of the run.
    names = [name for name in environ if name.endswith(_SECRET_SUFFIXES)]
    values = (environ[name].strip() for name in names)
    return tuple(value for value in values if len(value) >= MIN_SECRET_FRAGMENT)


# The process's environment as it stood at the last scan for secrets, and what
# the scan found. See `_process_secrets`.
_scanned: tuple[object, tuple[str, ...]] = (None, ())


def _process_secrets() -> tuple[str, ...]:
    """`secrets_from_env(os.environ)`, as it is now, scanning only when the environment changed.

    Every run is redacted against the environment as it stands when the run
    starts, and a scan of every name cost three to four per cent of the
    chapter 3 plan against the scripted model (`scripts/bench_trace.py`).
    Python code changes the environment through `os.environ`, which keeps its
    own table of the variables (`_data`, in bytes on POSIX); a copy of that
    table, compared with it at each run, is exact (a variable added, removed
    or changed makes them differ) at a twentieth of the cost of a scan. Where
    the table is not there to compare, every run scans.
    """
    global _scanned
    table = getattr(os.environ, "_data", None)
    if not isinstance(table, dict):
        return secrets_from_env(os.environ)
    copy, secrets = _scanned
    if copy == table:
        return secrets
    # Copied before the scan: a change made while it runs leaves the copy
    # behind the table, so the next run scans again.
    copy = dict(table)
    secrets = secrets_from_env(os.environ)
    _scanned = (copy, secrets)
    return secrets


def _spellings(text: str) -> tuple[bytes, ...]:
    """How `text` appears inside a string of a line, as either encoder of `encode_event` writes it.

    Both escape one character at a time, so the spelling of a piece of a
    string is a piece of the spelling of the string. Pydantic's writes text
    beyond ASCII as UTF-8 and escapes only what JSON requires; the standard
    library's, used for a line Pydantic cannot encode, escapes everything
    beyond ASCII. A piece with a quote and an accent in it is spelled
    differently by each, and differently from the piece's own UTF-8. Both
    encoders write their escapes in lower case, so a spelling, folded to lower
    case like the line it is looked for in, is found whatever the case of the
    letters the line holds.
    """
    spelled = [json.dumps(text)[1:-1].encode("ascii").lower()]
    # A lone surrogate Pydantic cannot encode: a line holding it is the standard library's.
    with contextlib.suppress(pydantic_core.PydanticSerializationError):
        spelled.append(pydantic_core.to_json(text)[1:-1].lower())
    return tuple(dict.fromkeys(spelled))


@functools.lru_cache(maxsize=32)
def _spelled_pieces(secrets: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(
        dict.fromkeys(
            spelling
            for secret in secrets
            for piece in sorted(secret_pieces(secret))
            for spelling in _spellings(piece)
        )
    )


@functools.lru_cache(maxsize=32)
def _spelled_search(secrets: tuple[str, ...]) -> Callable[[str], bool]:
    # Every spelling is UTF-8 (the standard library's is ASCII), so it is text.
    return piece_search(frozenset(piece.decode() for piece in _spelled_pieces(secrets)))


def _line_matches(secrets: Sequence[str]) -> Callable[[str], bool]:
    """The compiled search `utf8_line_search` runs, for a line it would fold as text."""
    return utf8_piece_search(frozenset(piece.decode() for piece in _spelled_pieces(tuple(secrets))))


def _matches_nothing(text: str) -> bool:
    return False


def utf8_line_search(secrets: Sequence[str]) -> Callable[[str], bool]:
    """`holds_secret` for a line still in text, one that UTF-8 can encode (no lone surrogate).

    The recorder asks it of every line it writes itself. Such a line needs no
    search for lone surrogates (see `sovereign_agent.redaction.utf8_piece_search`),
    and an ASCII line, almost every line, is folded as text: its bytes folded,
    without encoding it and decoding the result again.
    """
    matches = _line_matches(secrets)

    def holds(text: str) -> bool:
        # str.lower() on ASCII text folds A-Z alone, as bytes.lower() does;
        # beyond ASCII it folds more, so such a line is folded as bytes.
        return matches(text.lower() if text.isascii() else text.encode().lower().decode())

    return holds


def holds_secret(line: bytes, secrets: Sequence[str]) -> bool:
    """Whether `line` holds any piece of a secret that `redact` would hide, in either spelling.

    One search for every spelling of every piece at once (see
    `sovereign_agent.redaction.piece_search`): looking for them one after the
    other read each line once per piece, which made a run recorded with a key
    in the environment half as dear again as one without.
    """
    key = tuple(secrets)
    # bytes.lower() folds ASCII letters only, as the rule does; UTF-8 bytes
    # beyond ASCII are left as they are.
    folded = line.lower()
    try:
        text = folded.decode()
    except UnicodeDecodeError:
        # Not a line either encoder wrote (both write UTF-8): looked at byte by byte.
        return any(piece in folded for piece in _spelled_pieces(key))
    return _spelled_search(key)(text)


def redact(value: Any, secrets: Sequence[str]) -> Any:
    """`value` with every piece of a secret masked, by the rule of `sovereign_agent.redaction`.

    It works on the values, keys included, not on the JSON text, so a redacted
    event is still valid JSON whatever characters the secret holds.
    """
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {redact(key, secrets): redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item, secrets) for item in value]
    return value


def encode_event(event: Mapping[str, Any]) -> bytes:
    """One event as a line of compact JSON in UTF-8.

    Pydantic's serializer, four times faster than the standard library's here,
    which matters: a run writes a dozen events. Text a provider sent may hold a
    lone surrogate, which UTF-8 cannot carry; then the standard library writes
    the line with escapes instead.
    """
    try:
        return pydantic_core.to_json(event) + b"\n"
    except pydantic_core.PydanticSerializationError:
        pass
    try:
        return json.dumps(event, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"
    except (TypeError, ValueError) as error:
        # A setup whose arguments are not plain data: a defect to report, not to skip.
        raise TraceWriteError(
            f"a {event['event']} event holds data that is not JSON: {error}"
        ) from None


class TraceFile:
    """One trace file, for the whole process: its open descriptor and the lines not yet written.

    Opening and closing the file for every run would add about 4 us, some 3%
    of what recording the morning plan costs (`scripts/bench_trace.py`), to a
    budget that is already spent; so the descriptor is kept, and opened again
    (as the standard library's WatchedFileHandler does) when the path no longer
    names the file it points at: deleted, or rotated away. Lines wait here
    until a sink asks for them to be written; any still waiting when the
    interpreter exits (an exception escaped a run, say) are written then.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.pending: list[bytes] = []
        self._lock = threading.Lock()
        self._descriptor: int | None = None
        self._checked_at = 0.0

    def _open(self) -> int:
        # Called with the lock held.
        now = time.monotonic()
        if self._descriptor is not None and now - self._checked_at >= WRITE_EVERY_S:
            # Whether the path still names our file, looked at once a second at
            # most: two system calls per run would cost a noticeable part of it.
            self._checked_at = now
            try:
                current = os.path.samestat(os.fstat(self._descriptor), os.stat(self.path))
            except OSError:
                current = False
            if not current:
                os.close(self._descriptor)
                self._descriptor = None
        if self._descriptor is None:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            self._descriptor = os.open(self.path, flags, 0o644)
            self._checked_at = now
        return self._descriptor

    def open(self) -> None:
        """Open the file for appending unless it is open: a run learns now that it cannot be."""
        if self._descriptor is None:
            self.write()

    def write(self) -> None:
        """Append every pending line in one write, or just open the file when none waits.

        One write with O_APPEND: a batch lands whole at the end of the file,
        even when several processes append to the same trace. Opening alone
        is how a run learns, before it starts, that the file cannot be written.
        """
        pending = self.pending
        try:
            with self._lock:
                # Only the lines there now: another thread's run may append
                # while this one writes, and its lines wait for the next batch.
                count = len(pending)
                data = b"".join(pending[:count])
                del pending[:count]
                descriptor = self._open()
                view = memoryview(data)
                while view:
                    view = view[os.write(descriptor, view) :]
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise TraceWriteError(
                f"{TRACE_VARIABLE}: cannot append to {self.path}: {reason}"
            ) from None

    def close(self) -> None:
        """Write what is still pending, then close; at exit a failure can only go to stderr."""
        count = len(self.pending)
        try:
            if count:
                self.write()
        except TraceWriteError as error:
            print(f"{error} ({count} events not written)", file=sys.stderr)
        with self._lock:
            if self._descriptor is not None:
                os.close(self._descriptor)
                self._descriptor = None


_TRACE_FILES: dict[str, TraceFile] = {}
_TRACE_FILES_LOCK = threading.Lock()


def trace_file(path: Path) -> TraceFile:
    """The process's one `TraceFile` for `path`, made the first time it is asked for."""
    # Absolute now: a later change of directory must not move the trace.
    where = os.path.abspath(path)
    with _TRACE_FILES_LOCK:
        found = _TRACE_FILES.get(where)
        if found is None:
            found = _TRACE_FILES[where] = TraceFile(where)
        return found


def _close_trace_files() -> None:
    with _TRACE_FILES_LOCK:
        files = list(_TRACE_FILES.values())
    for file in files:
        file.close()


atexit.register(_close_trace_files)


class JsonLinesFile:
    """A sink that appends events to a file, one line of JSON each.

    Lines are written in batches, because a write per event would make
    recording a third dearer: when the run finishes, and before a model request
    if a second has passed since the last write. Against a real model, whose
    replies take seconds, that is before every request, so the file is never
    behind a run that is waiting on its model, the wait a process is most
    likely to die in. Lines left waiting by a run that raised are written with
    the next batch for the same file, or when the interpreter exits.
    """

    def __init__(
        self,
        path: Path,
        *,
        secrets: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self._file = trace_file(path)
        self._secrets = tuple(secrets)
        # The one-pass search for every spelling of every piece, made now: a
        # sink is made once for the keys a process holds, and writes many lines.
        self._search = utf8_line_search(self._secrets) if self._secrets else None
        self._matches = _line_matches(self._secrets) if self._secrets else _matches_nothing
        # Whether lines are searched at all: without a key, no probe need be made.
        self.searching = self._search is not None
        # Values found clean or not, by their text (see `known_clean`).
        self._clean: dict[str, bool] = {}
        self._clock = clock
        self._written_at = clock()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "run_started":
            # Opens the file (once per process): a trace that cannot be written
            # stops the run here, before the model is asked anything.
            self._file.open()
        line = encode_event(event)
        if self._secrets and holds_secret(line, self._secrets):
            line = encode_event(redact(event, self._secrets))
        self._append(kind, line)

    def known_clean(self, *parts: str) -> bool:
        """Whether each of `parts`, whole JSON values a line holds, holds no piece of a secret.

        For values a process writes again and again (a run's instructions,
        the offer of tools): each is searched once for the sink's keys and
        the answer kept, by the text, so a line need not search it again (see
        `take_line`'s `probe`). A value that cannot be UTF-8 is not clean.
        """
        for part in parts:
            clean = self._clean.get(part)
            if clean is None:
                try:
                    clean = self._search is None or not self._search(part)
                except UnicodeEncodeError:
                    return False
                if len(part) <= _CLEAN_LONGEST:
                    if len(self._clean) >= _CLEAN_KEPT:
                        self._clean.clear()
                    self._clean[part] = clean
            if not clean:
                return False
        return True

    def take_line(self, kind: str, text: str, probe: str | None = None) -> bool:
        """Append a line the recorder wrote itself, unless it must go the way of an event.

        The recorder writes the usual line straight from what it was told
        (see `Recorder`), the same bytes `encode_event` writes for the event.
        It is refused, and the recorder hands over the event instead, when it
        cannot be UTF-8 (a lone surrogate: the standard library's escapes are
        written then) or holds a piece of a secret (the event is redacted).

        `probe`, when given, is what is searched for secrets instead of the
        line: the line with some of its values, each a whole JSON value that
        `known_clean` found clean, left out. The event's way masks pieces
        inside its strings only, and every string of a value left out lies
        inside it, so searching the rest decides as searching the line would.
        """
        try:
            line = text.encode()
        except UnicodeEncodeError:
            return False
        if self.searching:
            searched = text if probe is None else probe
            # `_search` written out for an ASCII line, almost every line: a call less.
            if (
                self._matches(searched.lower())
                if searched.isascii()
                else self._search is not None and self._search(searched)
            ):
                return False
        file = self._file
        if kind == "run_started":
            file.open()
        # `_append`, written out: a call less for each of a run's lines.
        file.pending.append(line)
        if kind == "run_finished" or (
            kind == "model_request" and self._clock() - self._written_at >= WRITE_EVERY_S
        ):
            file.write()
            self._written_at = self._clock()
        return True

    def unsearched_lines(self) -> list[bytes] | None:
        """Where a line needing no search may go as it is; None when lines are searched.

        For the lines a run writes between its first request and its end
        (replies, calls, outcomes), which neither open the file nor write a
        batch: without a key to look for, `take_line` only encodes such a line
        and appends it here, and the recorder does that itself, a call less
        for each. The list is the file's own, emptied in place by each write.
        """
        return None if self.searching else self._file.pending

    def _append(self, kind: str, line: bytes) -> None:
        self._file.pending.append(line)
        if kind == "run_finished" or (
            kind == "model_request" and self._clock() - self._written_at >= WRITE_EVERY_S
        ):
            self._file.write()
            self._written_at = self._clock()


def _new_run_id() -> str:
    return os.urandom(16).hex()


class Offer:
    """What a line needs of one offer of tools, worked out once for every run that makes it.

    `fingerprints` follow the schemas' order; `by_name` maps each tool's name
    to its fingerprint (never changed once made: every run that makes this
    offer shares it), `text` is that map as a line spells it, `spelled`
    each fingerprint as a line spells it, and `definitions` the offer's own
    JSON (`offer_json`), the text of its schemas where a line writes them all.
    """

    __slots__ = ("by_name", "definitions", "fingerprints", "spelled", "text")

    def __init__(self, tools: Sequence[Mapping[str, Any]], offer_json: bytes = b"[]") -> None:
        self.definitions = offer_json.decode()
        self.fingerprints = tuple(schema_fingerprint(schema) for schema in tools)
        self.by_name = {
            schema["function"]["name"]: fingerprint
            for schema, fingerprint in zip(tools, self.fingerprints, strict=True)
        }
        self.text = _json(self.by_name)
        self.spelled = {name: _text(fingerprint) for name, fingerprint in self.by_name.items()}


# Offers by their compact JSON: a run offers the same schemas at every step,
# and every run of a process most often the same ones; that JSON costs a
# fraction of the canonical JSON a fingerprint hashes. Equal JSON is equal
# data, so the cache never answers wrongly; it is only emptied when it grows
# past its bound.
_OFFERS: dict[bytes, Offer] = {}
_OFFERS_KEPT = 256


def _offer(tools: Sequence[Mapping[str, Any]]) -> Offer:
    """What a line needs of the offer `tools`, found by its compact JSON or worked out now."""
    key = pydantic_core.to_json(tools)
    offer = _OFFERS.get(key)
    if offer is None:
        if len(_OFFERS) >= _OFFERS_KEPT:
            _OFFERS.clear()
        offer = _OFFERS[key] = Offer(tools, key)
    return offer


# How a line spells text: the standard library's encoder in C, which escapes
# exactly what Pydantic's does (quote, backslash, controls, in the same short
# and \u00xx forms) and leaves the rest as it is, so that any text without a
# lone surrogate comes out as the same bytes (a test holds the two to that).
# Called directly for text that is short by nature (ids, names, codes), a
# call less than `_text`; given anything but a str it raises TypeError, which
# sends the line the event's way. A lone surrogate is refused later, when the
# line is encoded, and the line goes the event's way too.
_short_text = json.encoder.encode_basestring


# Pydantic's encoder, found once: an outcome's result is spelled by it directly, a call less.
_to_json = pydantic_core.to_json


def _json(value: Any) -> str:
    """Any value as `encode_event` spells it: by Pydantic's encoder itself."""
    return _to_json(value).decode()


# The C encoder spells short ASCII text in half the time Pydantic's takes, but
# it copies character by character: past about this length Pydantic's is the
# quicker, five times so for a run's instructions.
_SHORT_TEXT = 40


def _text(value: str) -> str:
    """A string as `encode_event` spells it.

    The C encoder for short ASCII text, Pydantic's for the rest (the C
    encoder is a quarter as quick on text beyond ASCII, and slower on long
    text); a subclass of str, or anything else, is left to Pydantic, as in the event.
    """
    if type(value) is str and len(value) <= _SHORT_TEXT and value.isascii():
        return _short_text(value)
    return _json(value)


# A run's task and instructions as a line spells them, by the text: a process
# most often starts every run with the same ones, and spelling them costs some
# ten times what finding them here does. Equal text is spelled alike, so the
# cache never answers wrongly; it is emptied when it grows past its bound, and
# keeps no text longer than long instructions (a few megabytes in all at most).
_STARTS: dict[str, str] = {}
_STARTS_KEPT = 64
_STARTS_LONGEST = 16_384


def _start_text(value: str | None) -> str:
    """`_maybe_text` for what a run starts with, which the next run most likely starts with too."""
    if value is None:
        return "null"
    if type(value) is not str:
        return _json(value)
    spelled = _STARTS.get(value)
    if spelled is None:
        # Raises for a lone surrogate, which is then never kept.
        spelled = _text(value)
        if len(value) <= _STARTS_LONGEST:
            if len(_STARTS) >= _STARTS_KEPT:
                _STARTS.clear()
            _STARTS[value] = spelled
    return spelled


def _maybe_text(value: str | None) -> str:
    return "null" if value is None else _text(value)


def _number(value: int | None) -> str:
    if value is None:
        return "null"
    # str() spells an int as JSON does; a bool or a float goes to Pydantic.
    return str(value) if type(value) is int else _json(value)


def _flag(value: bool) -> str:
    return "true" if value is True else "false" if value is False else _json(value)


# The code of an outcome that went well, as a line spells it (`code` is always a plain str).
_OK_CODE = '"ok"'

# What a run has replied before its first reply: no text, spelled as none.
_NOT_REPLIED: tuple[str | None, str] = (None, "null")

# What a run has offered before its first request: nothing.
_NO_OFFER = Offer(())


# How a call's lines end, by its tool's source and effect classes: the same
# few pairs for every call of every run. Equal pairs end lines alike, so the
# cache never answers wrongly; it is emptied when it grows past its bound.
_TAILS: dict[tuple[str | None, frozenset[Effect] | None], str] = {}
_TAILS_KEPT = 256


def _tail_text(source: str | None, classes: frozenset[Effect] | None) -> str:
    """The end of a call's line: its source (when known) and its classes (when written)."""
    key = (source, classes)
    tail = _TAILS.get(key)
    if tail is None:
        fields: dict[str, Any] = {}
        if source is not None:
            fields["source"] = source
        if classes is not None:
            fields["effects"] = sorted(effect.value for effect in classes)
        tail = "".join(f",{_text(field)}:{_json(value)}" for field, value in fields.items())
        if len(_TAILS) >= _TAILS_KEPT:
            _TAILS.clear()
        _TAILS[key] = tail
    return tail


class Recorder:
    """Turns what `run_task` tells it into trace events, in order, for one run at a time.

    The clocks and the run ids are parameters so that a test, or a chapter's
    listing, can make a trace that is the same on every run. Each event is
    built whole, in one dictionary display, with its fields in the order the
    format lists them.

    A trace file's sink (`JsonLinesFile`) is not handed the event at all:
    building a dozen dictionaries a run and encoding each, field names and
    all, cost three times what encoding the events and writing them once
    does. For it each event's line is written straight from what the
    recorder was told, its constant parts spelled once, in the code below,
    and its strings by the encoder that spells them as Pydantic does
    (`_text`); a test holds every kind of line to the bytes `encode_event`
    writes for the event. A line the file refuses (a secret to redact, text
    UTF-8 cannot carry), or one whose values are not what the recorder knows
    how to spell, is handed over as the event, which is encoded as before.
    """

    def __init__(
        self,
        sink: Sink | None,
        *,
        clock: Callable[[], int] = time.perf_counter_ns,
        wall_clock: Callable[[], int] = time.time_ns,
        new_run_id: Callable[[], str] = _new_run_id,
        sources: Mapping[str, str] | None = None,
        effects: bool = False,
    ) -> None:
        self._sink = sink
        self._lines = sink if isinstance(sink, JsonLinesFile) else None
        # Where a reply's, a call's or an outcome's line goes when no key is
        # looked for (`JsonLinesFile.unsearched_lines`); None when lines are searched.
        self._unsearched = None if self._lines is None else self._lines.unsearched_lines()
        # Whether each call's event names its tool's effect classes (chapter
        # 10). Off for a recorder built by hand, so a trace chapter 4 prints
        # keeps its shape; the recorder SOVEREIGN_TRACE makes always writes them.
        self._write_effects = effects
        self._tools: Mapping[str, ExecutableTool[Any]] = {}
        self._effects: dict[str, list[str]] = {}
        # Which source each tool came from (`JoinedTools.sources`), handed in by
        # whoever joined them: chapter 2's dispatcher, which the chapters print,
        # does not know. Without it no event carries a source, as before.
        self._sources: Mapping[str, str] = {} if sources is None else dict(sources)
        self._clock = clock
        self._wall_clock = wall_clock
        self._new_run_id = new_run_id
        self._run = ""
        self._seq = 0
        self._step = 0
        self._offered: Mapping[str, str] = {}
        self._offer = _NO_OFFER
        self._last_offer: Sequence[dict[str, Any]] | None = None
        self._defined: set[str] = set()
        self._tokens: list[int | None] = [None, None]
        self._started_ns = self._asked_ns = 0
        # When each call still waiting for its outcome was taken up, and, for a
        # call of a batch, when its answer was ready: by call id, unique in a run.
        self._called: dict[str, int] = {}
        self._answered: dict[str, int] = {}
        # Each call's name, id and arguments as a line spells them, by its id.
        self._spelled_calls: dict[str, tuple[AssistantToolCall, tuple[str, str, str]]] = {}
        self._spelled_names: dict[str, str] = {}
        # The last reply's text and its spelling (see `run_finished`).
        self._replied: tuple[str | None, str] = _NOT_REPLIED
        # For lines: what every line of the run begins with, the offer's
        # fingerprints as a line spells them, each tool's source and classes.
        self._head = ""
        self._offered_text = "{}"
        self._tails: dict[str, str] = {}

    @property
    def enabled(self) -> bool:
        return self._sink is not None

    @property
    def run_id(self) -> str | None:
        """The id of the run being recorded, or of the last one; None before any, or without a sink.

        An evaluation reads it after each run to point from its results to the
        run's lines in the trace.
        """
        return self._run or None

    def _next(self) -> int:
        # The six events of every run count inline (`self._seq = seq = self._seq
        # + 1`): a call for each would cost more than the counting.
        self._seq += 1
        return self._seq

    def run_started(
        self,
        model: ModelClient,
        dispatcher: Dispatcher,
        task: str,
        *,
        system: str | None,
        max_steps: int,
        max_tool_calls: int,
    ) -> None:
        if self._sink is None:
            return
        self._run = self._new_run_id()
        self._step = 0
        self._offered, self._offer, self._last_offer, self._defined = {}, _NO_OFFER, None, set()
        self._tokens = [None, None]
        self._called, self._answered, self._spelled_calls = {}, {}, {}
        self._replied = _NOT_REPLIED
        self._spelled_names = {}
        # The run's tools as it starts: they can narrow, never change (the
        # dispatcher's registry is read-only, its tools frozen). Each tool's
        # classes are worked out the first time one of its calls is recorded.
        self._tools = dispatcher.tools
        self._effects = {}
        self._tails = {}
        name = getattr(model, "model", None)
        setup = dispatcher.setup
        self._started_ns = self._clock()
        self._seq = seq = 1
        now = self._wall_clock()
        if self._lines is not None:
            self._head = f'{{"v":{FORMAT_VERSION},"run":{_text(self._run)},"seq":'
        lines = self._lines
        if lines is not None:
            text: str | None = None
            probe = None
            try:
                head = (
                    f'{self._head}{seq},"event":"run_started",'
                    f'"gen_ai.operation.name":"invoke_agent","time_unix_nano":{_number(now)},'
                    f'"model":{_short_text(model.label)},'
                    f'"gen_ai.request.model":'
                    f"{_short_text(name) if isinstance(name, str) else 'null'},"
                    f'"task":'
                )
                task_text, system_text = _start_text(task), _start_text(system)
                middle = (
                    f'"max_steps":{_number(max_steps)},"max_tool_calls":{_number(max_tool_calls)},'
                    f'"hints":{_flag(dispatcher.hints)},"setup":'
                )
                setup_text = "null" if setup is None else _json(_setup(setup))
                text = (
                    f'{head}{task_text},"gen_ai.system_instructions":{system_text},'
                    f"{middle}{setup_text}}}\n"
                )
                # With a key to hide, the task, the instructions and the setup,
                # most often the same run after run, are searched once.
                if lines.searching and lines.known_clean(task_text, system_text, setup_text):
                    probe = f'{head}\n,"gen_ai.system_instructions":\n,{middle}\n}}\n'
            except (TypeError, ValueError):
                # A value the line cannot spell as the event's encoder would.
                text = None
            if text is not None and lines.take_line("run_started", text, probe):
                return
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": seq,
                "event": "run_started",
                "gen_ai.operation.name": "invoke_agent",
                "time_unix_nano": now,
                "model": model.label,
                "gen_ai.request.model": name if isinstance(name, str) else None,
                "task": task,
                "gen_ai.system_instructions": system,
                "max_steps": max_steps,
                "max_tool_calls": max_tool_calls,
                "hints": dispatcher.hints,
                # The setup's own objects, not a copy: a sink writes the event at
                # once (a file, the replay), so it records the stock the run began with.
                "setup": None if setup is None else _setup(setup),
            }
        )

    def model_request(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> None:
        if self._sink is None:
            return
        self._step += 1
        self._asked_ns = self._clock()
        definitions: list[dict[str, Any]] = []
        # The definitions as a line spells them: none after the first offer.
        definitions_text = "[]"
        # Most steps offer what the step before offered: equal data, equal fingerprints.
        if tools != self._last_offer:
            offer = _offer(tools)
            self._offer = offer
            self._offered = offer.by_name
            for schema, fingerprint in zip(tools, offer.fingerprints, strict=True):
                # Each schema is written in full once per run, the first time it
                # is offered; after that its fingerprint stands for it.
                if fingerprint not in self._defined:
                    self._defined.add(fingerprint)
                    definitions.append(schema)
            self._last_offer = tools
            if self._lines is not None:
                self._offered_text = offer.text
                # Every schema of the offer is new (a run's first): the offer's
                # own JSON, already made, is their text.
                definitions_text = (
                    offer.definitions if len(definitions) == len(tools) else _json(definitions)
                )
        self._seq = seq = self._seq + 1
        lines = self._lines
        if lines is not None:
            head = (
                f'{self._head}{seq},"event":"model_request","gen_ai.operation.name":"chat",'
                f'"step":{self._step},"messages":{len(messages)},"tools":'
            )
            text = f'{head}{self._offered_text},"gen_ai.tool.definitions":{definitions_text}}}\n'
            probe = None
            # With a key to hide, the offer's two texts, the same at every step
            # of every run, are searched once (`known_clean`), the rest each time.
            if lines.searching and lines.known_clean(self._offered_text, definitions_text):
                probe = f'{head}\n,"gen_ai.tool.definitions":\n}}\n'
            if lines.take_line("model_request", text, probe):
                return
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": seq,
                "event": "model_request",
                "gen_ai.operation.name": "chat",
                "step": self._step,
                "messages": len(messages),
                # A copy: the map is the offer's, shared by every run that makes it.
                "tools": dict(self._offered),
                "gen_ai.tool.definitions": definitions,
            }
        )

    def model_reply(self, reply: ModelReply) -> None:
        if self._sink is None:
            return
        # Each of the reply's fields read once: a reply is a Pydantic model,
        # whose every attribute read goes the long way round (it defines __getattr__).
        usage, finish_reason = reply.usage, reply.finish_reason
        input_tokens = output_tokens = None
        if usage is not None:
            input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
            tokens = self._tokens
            self._tokens = [(tokens[0] or 0) + input_tokens, (tokens[1] or 0) + output_tokens]
        self._seq = seq = self._seq + 1
        duration = self._clock() - self._asked_ns
        message = reply.message
        lines = self._lines
        if lines is not None:
            try:
                content, calls = message.content, message.tool_calls
                content_text = _maybe_text(content)
                # Kept for the run's end: a final reply's text is most often its answer.
                self._replied = (content, content_text)
                text: str | None = (
                    f'{self._head}{seq},"event":"model_reply","gen_ai.operation.name":"chat",'
                    f'"step":{self._step},"gen_ai.response.model":{_short_text(reply.model)},'
                    f'"gen_ai.response.finish_reasons":'
                    f"{f'[{_short_text(finish_reason)}]' if finish_reason else '[]'},"
                    f'"gen_ai.usage.input_tokens":'
                    f"{'null' if usage is None else _number(input_tokens)},"
                    f'"gen_ai.usage.output_tokens":'
                    f"{'null' if usage is None else _number(output_tokens)},"
                    # An int, as the clock gives, formats as JSON writes it; anything else is
                    # `_number`'s (a bool is no int here: JSON writes it as true or false).
                    f'"duration_ns":{duration if type(duration) is int else _number(duration)},'
                    f'"content":{content_text},"tool_calls":['
                    + (
                        ",".join(
                            [
                                f'{{"id":{call_id},"name":{name},"arguments":{arguments}}}'
                                for name, call_id, arguments in map(self._spell_call, calls)
                            ]
                        )
                        if calls
                        else ""
                    )
                    + "]}\n"
                )
            except (TypeError, ValueError):
                # A value the line cannot spell as the event's encoder would.
                text = None
            if text is not None:
                unsearched = self._unsearched
                if unsearched is not None:
                    # `take_line` written out for a line no key is looked for in.
                    try:
                        unsearched.append(text.encode())
                        return
                    except UnicodeEncodeError:
                        # A lone surrogate: the event's way writes the standard library's escapes.
                        pass
                elif lines.take_line("model_reply", text):
                    return
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": seq,
                "event": "model_reply",
                "gen_ai.operation.name": "chat",
                "step": self._step,
                "gen_ai.response.model": reply.model,
                "gen_ai.response.finish_reasons": [reply.finish_reason]
                if reply.finish_reason
                else [],
                "gen_ai.usage.input_tokens": None if usage is None else usage.input_tokens,
                "gen_ai.usage.output_tokens": None if usage is None else usage.output_tokens,
                "duration_ns": duration,
                "content": message.content,
                "tool_calls": [
                    {"id": call.id, "name": call.name, "arguments": call.arguments_json}
                    for call in message.tool_calls
                ],
            }
        )

    def _spell_call(self, call: AssistantToolCall) -> tuple[str, str, str]:
        """A call's name, id and arguments as its lines spell them, spelled once a run.

        The reply that asks for a call spells them first; the call's own two
        events find them here, by its id, when they are told of the same call.
        """
        found = self._spelled_calls.get(call.id)
        # The same object, not merely the same id: calls are frozen, so the
        # spellings are its own, whatever another call reusing the id holds.
        if found is not None and found[0] is call:
            return found[1]
        spelled = (_short_text(call.name), _short_text(call.id), _text(call.arguments_json))
        self._spelled_calls[call.id] = (call, spelled)
        self._spelled_names[call.name] = spelled[0]
        return spelled

    def _names_text(self, names: Sequence[str]) -> str:
        """Tool names as a line spells a list of them, each as the run's calls spelled it."""
        if not names:
            return "[]"
        spelled = self._spelled_names
        return f"[{','.join([spelled.get(name) or _short_text(name) for name in names])}]"

    def tool_call(self, raw: AssistantToolCall) -> None:
        if self._sink is None:
            return
        # The call's id and name read once: a call is a Pydantic model, whose
        # every attribute read goes the long way round (it defines __getattr__).
        raw_id, tool = raw.id, raw.name
        self._called[raw_id] = self._clock()
        self._seq = seq = self._seq + 1
        lines = self._lines
        if lines is not None:
            try:
                # `_spell_call`'s cache written out: the reply spelled this call.
                found = self._spelled_calls.get(raw_id)
                name, call_id, arguments = (
                    found[1] if found is not None and found[0] is raw else self._spell_call(raw)
                )
                text: str | None = (
                    f'{self._head}{seq},"event":"tool_call","gen_ai.operation.name":"execute_tool",'
                    f'"step":{self._step},"gen_ai.tool.name":{name},'
                    f'"gen_ai.tool.call.id":{call_id},'
                    f'"gen_ai.tool.call.arguments":{arguments}'
                    f"{self._tails.get(tool) or self._tail(tool)}}}\n"
                )
            except (TypeError, ValueError):
                # A value the line cannot spell as the event's encoder would.
                text = None
            if text is not None:
                unsearched = self._unsearched
                if unsearched is not None:
                    # `take_line` written out for a line no key is looked for in.
                    try:
                        unsearched.append(text.encode())
                        return
                    except UnicodeEncodeError:
                        # A lone surrogate: the event's way writes the standard library's escapes.
                        pass
                elif lines.take_line("tool_call", text):
                    return
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": seq,
                "event": "tool_call",
                "gen_ai.operation.name": "execute_tool",
                "step": self._step,
                "gen_ai.tool.name": raw.name,
                "gen_ai.tool.call.id": raw.id,
                "gen_ai.tool.call.arguments": raw.arguments_json,
                **self._source(raw.name),
                **self._classes(raw.name),
            }
        )

    def tool_answered(self, call_id: str) -> None:
        """A call of a batch has its answer now; its outcome is told later, with the rest."""
        if self._sink is None:
            return
        self._answered[call_id] = self._clock()

    def tool_outcome(self, raw: AssistantToolCall, outcome: ToolOutcome) -> None:
        if self._sink is None:
            return
        # A call answered alone ends now; one of a batch ended when it said so.
        raw_id, tool = raw.id, raw.name
        ended = self._answered.pop(raw_id, None)
        if ended is None:
            ended = self._clock()
        started = self._called.pop(raw_id, ended)
        observation = outcome.observation
        failure = outcome.failure
        code = "ok" if observation.get("ok") is True else str(observation["error"])
        self._seq = seq = self._seq + 1
        lines = self._lines
        if lines is not None:
            try:
                found = self._spelled_calls.get(raw_id)
                name, call_id, _ = (
                    found[1] if found is not None and found[0] is raw else self._spell_call(raw)
                )
                duration = ended - started
                handler_ran = outcome.handler_ran
                # The usual outcome's parts as constants, the rest spelled: one
                # f-string, where joining five pieces copied the line four times.
                failure_text = (
                    '"failure_stage":null,"exception.type":null,"exception.message":null'
                    if failure is None
                    else f'"failure_stage":{_short_text(failure.stage)},'
                    f'"exception.type":{_short_text(failure.error_type)},'
                    f'"exception.message":{_text(failure.message)}'
                )
                text: str | None = (
                    f'{self._head}{seq},"event":"tool_outcome","gen_ai.operation.name":"execute_tool",'
                    f'"step":{self._step},"gen_ai.tool.name":{name},'
                    f'"gen_ai.tool.call.id":{call_id},'
                    f'"code":{_OK_CODE if code == "ok" else _short_text(code)},'
                    f'"handler_ran":{"true" if handler_ran is True else _flag(handler_ran)},'
                    f'"duration_ns":{duration if type(duration) is int else _number(duration)},'
                    f'"schema_fingerprint":{self._offer.spelled.get(tool, "null")},'
                    f'"gen_ai.tool.call.result":{_to_json(observation).decode()},{failure_text},'
                    f'"argument_problems":'
                    f"{'[]' if not outcome.argument_problems else _json(_problems(outcome))}"
                    f"{self._tails.get(tool) or self._tail(tool)}}}\n"
                )
            except (TypeError, ValueError):
                # A value the line cannot spell as the event's encoder would.
                text = None
            if text is not None:
                unsearched = self._unsearched
                if unsearched is not None:
                    # `take_line` written out for a line no key is looked for in.
                    try:
                        unsearched.append(text.encode())
                        return
                    except UnicodeEncodeError:
                        # A lone surrogate: the event's way writes the standard library's escapes.
                        pass
                elif lines.take_line("tool_outcome", text):
                    return
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": seq,
                "event": "tool_outcome",
                "gen_ai.operation.name": "execute_tool",
                "step": self._step,
                "gen_ai.tool.name": raw.name,
                "gen_ai.tool.call.id": raw.id,
                "code": code,
                "handler_ran": outcome.handler_ran,
                "duration_ns": ended - started,
                "schema_fingerprint": self._offered.get(raw.name),
                "gen_ai.tool.call.result": observation,
                # What the model is never told, written for the operator.
                "failure_stage": None if failure is None else failure.stage,
                "exception.type": None if failure is None else failure.error_type,
                "exception.message": None if failure is None else failure.message,
                "argument_problems": _problems(outcome),
                **self._source(raw.name),
                **self._classes(raw.name),
            }
        )

    def _source(self, name: str) -> dict[str, str]:
        # A name no source offered (the model made it up) gets no source: the
        # field says where a call went, and such a call went nowhere.
        source = self._sources.get(name)
        return {} if source is None else {"source": source}

    def _classes(self, name: str) -> dict[str, list[str]]:
        if not self._write_effects:
            return {}
        classes = self._effects.get(name)
        if classes is None:
            tool = self._tools.get(name)
            if tool is None:
                # A name the run has no tool for (the model made it up) could do nothing.
                return {}
            classes = self._effects[name] = sorted(effect.value for effect in tool.effect_classes)
        return {"effects": list(classes)}

    def _tail(self, name: str) -> str:
        """A call's source and classes as its lines end with them, looked up once per tool a run."""
        tail = self._tails.get(name)
        if tail is None:
            source = self._sources.get(name)
            tool = self._tools.get(name) if self._write_effects else None
            classes = None if tool is None else tool.effect_classes
            tail = self._tails[name] = _tail_text(source, classes)
        return tail

    def scope_narrowed(self, narrowing: Narrowing) -> None:
        if self._sink is None:
            return
        # Rare, at most once or twice a run: always handed over as the event.
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": self._next(),
                "event": "scope_narrowed",
                "gen_ai.operation.name": "execute_tool",
                "step": self._step,
                "gen_ai.tool.name": narrowing.tool,
                "gen_ai.tool.call.id": narrowing.call_id,
                "reason": narrowing.reason,
                "kept": list(narrowing.kept),
                "removed": list(narrowing.removed),
                "ignored": list(narrowing.ignored),
            }
        )

    def run_finished(self, record: FinishedRun) -> None:
        if self._sink is None:
            return
        self._seq = seq = self._seq + 1
        duration = self._clock() - self._started_ns
        stop_reason = str(record.stop_reason)
        # The class only: a provider's own words may quote part of a key.
        error_type = None if record.error is None else record.error.split(":")[0]
        input_tokens, output_tokens = self._tokens
        lines = self._lines
        if lines is not None:
            try:
                # The answer is the last reply's text, the very object, already
                # spelled (a long text is Pydantic's to spell, a dear call).
                replied, replied_text = self._replied
                answer = record.answer
                answer_text = replied_text if answer is replied else _maybe_text(answer)
                refused = record.refused
                text: str | None = (
                    f'{self._head}{seq},"event":"run_finished","gen_ai.operation.name":"invoke_agent",'
                    f'"stop_reason":{_short_text(stop_reason)},"steps":{_number(record.steps)},'
                    f'"answer":{answer_text},'
                    f'"error.type":{"null" if error_type is None else _short_text(error_type)},'
                    f'"requested":{self._names_text(record.requested)},'
                    f'"executed":{self._names_text(record.executed)},'
                    # One f-string: joining pieces with + copied the line for each.
                    f'"refused":[{",".join(map(_refusal_text, refused)) if refused else ""}],'
                    f'"duration_ns":{duration if type(duration) is int else _number(duration)},'
                    f'"gen_ai.usage.input_tokens":{_number(input_tokens)},'
                    f'"gen_ai.usage.output_tokens":{_number(output_tokens)}}}\n'
                )
            except (TypeError, ValueError):
                # A value the line cannot spell as the event's encoder would.
                text = None
            if text is not None and lines.take_line("run_finished", text):
                return
        self._sink(
            {
                "v": FORMAT_VERSION,
                "run": self._run,
                "seq": seq,
                "event": "run_finished",
                "gen_ai.operation.name": "invoke_agent",
                "stop_reason": stop_reason,
                "steps": record.steps,
                "answer": record.answer,
                "error.type": error_type,
                "requested": list(record.requested),
                "executed": list(record.executed),
                "refused": [list(pair) for pair in record.refused],
                "duration_ns": duration,
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
            }
        )


def _refusal_text(pair: tuple[str, str]) -> str:
    """A refused call's tool and code as a line spells the pair."""
    tool, code = pair
    return f"[{_short_text(tool)},{_short_text(code)}]"


def _setup(setup: Setup) -> dict[str, Any]:
    return {"factory": setup.factory, "arguments": setup.arguments}


def _problems(outcome: ToolOutcome) -> list[dict[str, Any]]:
    return [
        {"location": list(problem.location), "kind": problem.kind}
        for problem in outcome.argument_problems
    ]


# The sinks `recorder_from_env` made for the process's environment, by the file
# and the secrets each redacts: a run that finds both as the last run left them
# appends through the same sink, instead of paying again (Path, absolute path,
# the process's file looked up under a lock) for one it would build the same.
# Bounded, like the fingerprints above, for a process that keeps changing its keys.
_ENV_SINKS: dict[tuple[str, tuple[str, ...]], JsonLinesFile] = {}
_ENV_SINKS_KEPT = 64


def recorder_from_env(
    environ: Mapping[str, str] | None = None, *, sources: Mapping[str, str] | None = None
) -> Recorder:
    """A recorder that appends to the file `SOVEREIGN_TRACE` names, or one that records nothing.

    Without `environ`, the process's environment as it is when the run starts:
    the file it names now, and the keys it holds now. `sources` is the joined
    tools' `sources` (chapter 9), so each call's event names where it went.
    Each call's event also names its tool's effect classes (chapter 10).
    """
    env = os.environ if environ is None else environ
    path = env.get(TRACE_VARIABLE, "").strip()
    if not path:
        return Recorder(None)
    if environ is not None:
        return Recorder(
            JsonLinesFile(Path(path), secrets=secrets_from_env(environ)),
            sources=sources,
            effects=True,
        )
    if not os.path.isabs(path):
        # Absolute now: a later change of directory must not move the trace.
        path = os.path.join(os.getcwd(), path)
    key = (path, _process_secrets())
    sink = _ENV_SINKS.get(key)
    if sink is None:
        if len(_ENV_SINKS) >= _ENV_SINKS_KEPT:
            _ENV_SINKS.clear()
        sink = _ENV_SINKS[key] = JsonLinesFile(Path(path), secrets=key[1])
    return Recorder(sink, sources=sources, effects=True)
