"""The other end of a stand-in: the reference solution, or one faulty version of it, serving calls.

Runs in its own sandbox, one per learner-test file and batch. It loads the
book and the reference module once, then, for each run of a learner's tests,
receives one end of that run's socket from the grader and forks a server:
the fork applies the faulty version the run was given (or none) to its own
copy of the reference, forbids new processes, and answers the stand-in's
requests, one JSON line each:
call a surface function, call a declared method or read a declared field of
an object it keeps, or send the surface's constants. Results the surface
declares as plain data travel as strict JSON; declared objects stay here and
travel as a handle and their kind. Exceptions travel as the builtin classes
they belong to. Nothing else crosses: the learner's tests run elsewhere and
see only these answers, so which version answers can be told only by
behaviour.

Where the surface says the tests make folders (`Surface.files`), a request
may carry the tests' temporary folder, described as `files.materialise`
reads it; the server makes it again at the path the grader chose for the
run (the learner's `TMPDIR`), replacing the last copy, before it answers.

It runs no learner code; it reads the learner's requests under the same
strict decoder the grader uses, in a sandbox under the same limits. A fork
shares nothing with the next one: each starts from the state the oracle had
before any run, works in a folder of its own (where the files the tests name
go, see `Surface.paths`), and ends with its run, its folders removed after it.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from bookproof.grade.book import JSON, Book, FaultyVersion, LearnerTests, book_of
from bookproof.grade.child.encoding import FrameError, decode_json, make_encoder
from bookproof.grade.child.harness import EXCEPTION_NAMES
from bookproof.grade.child.limits import forbid_new_processes, start_up
from bookproof.grade.files import materialise

__all__ = ["main", "serve"]

MAX_OBJECTS = 10_000
MAX_REQUEST = 4 * 1024 * 1024
# The only places a run's copy of the tests' folder may be made.
_SCRATCH = re.compile(r"^/tmp/work-[0-9a-f]{32}$")
# How long a server outlives its run's clock: the learner's sandbox starts
# after the server is forked, and its watcher's clock later still.
_ALARM_GRACE_SECONDS = 30


def load_reference(book: Book, path: str) -> ModuleType:
    """The reference module, loaded fresh from its file under the book's module name."""
    spec = importlib.util.spec_from_file_location(book.module, path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[book.module] = module
    spec.loader.exec_module(module)
    return module


def implementation(
    group: LearnerTests, reference: ModuleType, variant: FaultyVersion | None, rng: random.Random
) -> dict[str, Callable[..., Any]]:
    """The surface's functions as this run serves them: the reference's, or the variant's."""
    functions = {name: getattr(reference, name) for name in group.surface.functions}
    if variant is not None:
        replaced = variant.make(reference, rng)
        unknown = set(replaced) - set(functions)
        if unknown:
            raise RuntimeError(f"{variant.id} replaces names outside the surface: {unknown}")
        functions.update(replaced)
    return functions


def _plain(value: Any) -> Any:
    # Read-only mappings and tuples are plain data in spirit; send them as such.
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def in_folder(path: Any, folder: str) -> Any:
    """Where the file a test named lives in this run: inside the run's own folder.

    The test's path is one of its own sandbox (pytest's tmp_path, say), which
    this sandbox cannot see; taken inside `folder`, it names the same file for
    the whole run and no file of another run. `..` cannot climb out of it.
    """
    if not isinstance(path, str):
        return path  # not a path: the code under test says what it thinks of it
    inside = os.path.join(folder, os.path.normpath("/" + path).lstrip("/"))
    os.makedirs(os.path.dirname(inside), exist_ok=True)
    return inside


def serve(
    sock: socket.socket,
    group: LearnerTests,
    functions: Mapping[str, Callable[..., Any]],
    constants: Mapping[str, Any],
    folder: str = ".",
    scratch: Path | None = None,
) -> None:
    """Answer requests until the stand-in's side closes.

    Files named by tests (`Surface.paths`) go in `folder`; `scratch` is where
    the tests' folders are made again when a request carries them.
    """
    encode = make_encoder()
    surface = group.surface
    objects: list[tuple[str, Any]] = []
    pending = bytearray()

    def reply(frame: dict[str, Any]) -> None:
        text = encode(frame)
        sock.sendall(((text or '{"status":"wrong_type"}') + "\n").encode("ascii"))

    def live(value: Any) -> Any:
        if isinstance(value, list):
            return [live(item) for item in value]
        if isinstance(value, dict):
            if value.keys() == {"$handle"}:
                return objects[value["$handle"]][1]
            return {key: live(item) for key, item in value.items()}
        return value

    def answer(result: Any, kind: str) -> None:
        if kind == JSON:
            value = encode(result)
            reply(
                {"status": "wrong_type"}
                if value is None
                else {"status": "returned", "value": result}
            )
            return
        if len(objects) >= MAX_OBJECTS:
            raise MemoryError("too many objects")
        objects.append((kind, result))
        reply({"status": "object", "handle": len(objects) - 1, "kind": kind})

    while True:
        while b"\n" not in pending:
            chunk = sock.recv(65536)
            if not chunk or len(pending) > MAX_REQUEST:
                return
            pending += chunk
        end = pending.index(b"\n")
        line = bytes(pending[:end])
        del pending[: end + 1]
        try:
            request = decode_json(line)
            if not isinstance(request, dict):
                raise FrameError("not an object")
            if request.get("constants") is True:
                reply({"status": "returned", "value": _plain(dict(constants))})
                continue
            if "files" in request:
                if scratch is None:
                    raise FrameError("files this run does not take")
                shutil.rmtree(scratch, ignore_errors=True)
                materialise(request["files"], scratch)
            args, kwargs = live(request["args"]), live(request["kwargs"])
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise FrameError("arguments")
            if "call" in request:
                name = request["call"]
                if name not in surface.functions:
                    raise AttributeError(name)
                if name in surface.paths:
                    if args:
                        args[0] = in_folder(args[0], folder)
                    elif "path" in kwargs:
                        kwargs["path"] = in_folder(kwargs["path"], folder)
                answer(functions[name](*args, **kwargs), surface.functions[name])
            else:
                kind, target = objects[request["on"]]
                spec = surface.objects[kind]
                if "method" in request and request["method"] in spec.methods:
                    name = request["method"]
                    answer(getattr(target, name)(*args, **kwargs), spec.methods[name])
                elif "field" in request and request["field"] in spec.fields:
                    answer(getattr(target, request["field"]), JSON)
                else:
                    raise AttributeError("not offered")
        except Exception as exc:  # the request's failure is the test's business
            names = [n for n in EXCEPTION_NAMES if isinstance(exc, getattr(builtins, n))]
            reply({"status": "raised", "raised": names})


def main() -> None:
    """Load the book and the reference once, then fork one server per run the grader sends."""
    config = json.loads(sys.argv[1])
    # The oracle itself may fork (that is its job); each server it forks
    # forbids new processes before it reads a single request.
    start_up(config["limits"], require_filter=False, forbid_processes=False)
    book = book_of(importlib.import_module(f"bookproof.grade.books.book{config['book']:02d}"))
    (group,) = [g for g in book.groups() if g.file == config["file"]]
    reference = load_reference(book, config["reference"])
    constants = {name: getattr(reference, name) for name in group.surface.constants}
    if config["require_filter"]:
        # The sandbox's own /tmp (bubblewrap): runs may make folders in it, but
        # none may list it, so code under test led there by a link cannot
        # find another run's copy of another learner's folders.
        os.chmod("/tmp", 0o1733)
    # Each server's folders, by its pid: removed once the server has ended.
    folders: dict[int, list[Path]] = {}
    with socket.socket(fileno=config["control"]) as control:
        while True:
            _reap(folders)
            message, fds, _, _ = socket.recv_fds(control, 65536, 1)
            if not message:
                os._exit(0)
            if len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                continue
            run = json.loads(message)
            # A folder of its own, in case the code under test writes files.
            own = Path(tempfile.mkdtemp(prefix="run-"))
            scratch = None
            if run.get("scratch") is not None:
                if not _SCRATCH.match(run["scratch"]):
                    raise ValueError("a run's scratch is not where the grader makes them")
                scratch = Path(run["scratch"])
            pid = os.fork()
            if pid == 0:
                control.close()
                _serve_one(run, fds[0], group, reference, constants, config, own, scratch)
            # Removed when that server has ended, however it ended.
            folders[pid] = [own] if scratch is None else [own, scratch]
            os.close(fds[0])


def _serve_one(
    run: Mapping[str, Any],
    fd: int,
    group: LearnerTests,
    reference: ModuleType,
    constants: Mapping[str, Any],
    config: Mapping[str, Any],
    own: Path,
    scratch: Path | None,
) -> None:
    """In a fresh fork: one run's implementation on one socket, then exit."""
    try:
        # However a run ends, this server does not outlive it by much. It
        # outlives the run's own clock, though: the grader's watcher must be
        # the one to end a slow run, as a timeout. A server gone first would
        # fail the tests' next call, and a faulty version would count as
        # caught by tests that merely ran out of time.
        signal.alarm(max(1, int(run["timeout"])) + _ALARM_GRACE_SECONDS)
        if not forbid_new_processes() and config["require_filter"]:
            os._exit(1)
        os.chdir(own)
        variant = next((v for v in group.versions() if v.id == run["variant"]), None)
        functions = implementation(group, reference, variant, random.Random(run["seed"]))
        with socket.socket(fileno=fd) as sock:
            serve(sock, group, functions, constants, str(own), scratch)
    except BaseException:
        # A defect of ours: said on stderr (the grader's to read), and the run
        # then sees a closed socket, never a made-up answer.
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    os._exit(0)


def _reap(folders: dict[int, list[Path]]) -> None:
    # Servers that finished: collected so that they do not linger as zombies,
    # and their folders removed, so that a batch's runs never fill the oracle's /tmp.
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        for folder in folders.pop(pid, []):
            shutil.rmtree(folder, ignore_errors=True)
