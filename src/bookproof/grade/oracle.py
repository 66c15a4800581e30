"""The other end of a stand-in: the reference solution, or one faulty version of it, serving calls.

Runs in its own sandbox during one run of a learner's tests. It loads the
reference module fresh from its file, applies the faulty version this run
was given (or none), and answers the stand-in's requests, one JSON line each:
call a surface function, call a declared method or read a declared field of
an object it keeps, or send the surface's constants. Results the surface
declares as plain data travel as strict JSON; declared objects stay here and
travel as a handle and their kind. Exceptions travel as the builtin classes
they belong to. Nothing else crosses: the learner's tests run elsewhere and
see only these answers, so which version answers can be told only by
behaviour.

It runs no learner code; it reads the learner's requests under the same
strict decoder the grader uses, in a sandbox under the same limits.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import json
import os
import random
import socket
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from bookproof.grade.book import JSON, Book, Check, LearnerTests, book_of
from bookproof.grade.child.encoding import FrameError, decode_json, make_encoder
from bookproof.grade.child.harness import EXCEPTION_NAMES
from bookproof.grade.child.limits import start_up

__all__ = ["main", "serve"]

MAX_OBJECTS = 10_000
MAX_REQUEST = 4 * 1024 * 1024


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
    group: LearnerTests, reference: ModuleType, variant: Check | None, rng: random.Random
) -> dict[str, Callable[..., Any]]:
    """The surface's functions as this run serves them: the reference's, or the variant's."""
    functions = {name: getattr(reference, name) for name in group.surface.functions}
    if variant is not None:
        assert variant.variant is not None
        replaced = variant.variant(reference, rng)
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


def serve(
    sock: socket.socket,
    group: LearnerTests,
    functions: Mapping[str, Callable[..., Any]],
    constants: Mapping[str, Any],
) -> None:
    """Answer requests until the stand-in's side closes."""
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
            args, kwargs = live(request["args"]), live(request["kwargs"])
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise FrameError("arguments")
            if "call" in request:
                name = request["call"]
                if name not in surface.functions:
                    raise AttributeError(name)
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
    config = json.loads(sys.argv[1])
    start_up(config["limits"], require_filter=config["require_filter"])
    book = book_of(importlib.import_module(f"bookproof.grade.books.book{config['book']:02d}"))
    (group,) = [g for g in book.groups() if g.file == config["file"]]
    variant = next((c for c in group.checks if c.id == config["variant"]), None)
    reference = load_reference(book, config["reference"])
    rng = random.Random(config["seed"])
    functions = implementation(group, reference, variant, rng)
    constants = {name: getattr(reference, name) for name in group.surface.constants}
    with socket.socket(fileno=config["channel"]) as sock:
        serve(sock, group, functions, constants)
    os._exit(0)
