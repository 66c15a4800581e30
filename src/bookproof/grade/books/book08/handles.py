"""Exercise Book 8, Unit B: notes by reference (`open_document`, `show_lucy`), and their tests."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import JSON, Surface, Trial
from bookproof.grade.books.book08.common import (
    _UNREADABLE,
    BOOK,
    DRAFT,
    S_UNIT_B,
    Replaced,
    _door,
    _folder,
    _name,
    _notes,
    _run,
    _secret,
    _summary,
    _text,
    _value,
)
from bookproof.grade.files import Link
from bookproof.grade.questions import expect, same

# --- exercise 2: notes by reference ----------------------------------------------------------


def _open(name: str) -> list[Any]:
    return ["open_document", {"name": name}]


def _show(handle: str) -> list[Any]:
    return ["show_lucy", {"handle": handle}]


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="open_document answers a handle (doc-1, doc-2, ...), the name and the size; no text.",
    hint="Opening a note did not answer only its handle, its name and its size, with handles "
    "numbered in the order notes were opened.",
)
def ex2_open_gives_handles(rng: random.Random) -> Trial:
    notes = _notes(rng, rng.randint(2, 4))
    order = list(notes)
    rng.shuffle(order)
    root = yield from _folder(notes)
    run = _summary((yield _run(root, [_open(name) for name in order])))
    if run is None:
        return _UNREADABLE
    expected = [
        fx.ok({"handle": f"doc-{n}", "document": name, "bytes": len(notes[name].encode())})
        for n, name in enumerate(order, start=1)
    ]
    if not same(expected, run["observations"]):
        return "Each open should answer its handle, the note's name and its size, and no text."
    return expect(run["narrowings"] == [], "Opening a note shows the model no text: no narrowing.")


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="show_lucy puts the note's text in front of Lucy; no line of it reaches the model.",
    hint="Showing a note did not put its text in front of Lucy, or its answer to the model "
    "carried more than that it was shown.",
)
def ex2_text_reaches_lucy_only(rng: random.Random) -> Trial:
    secret = _secret(rng)
    name = _name(rng)
    text = _text(rng) + secret + "\n"
    root = yield from _folder({name: text, _name(rng): _text(rng)})
    run = _summary((yield _run(root, [_open(name), _show("doc-1")])))
    if run is None:
        return _UNREADABLE
    if not same([{"handle": "doc-1", "document": name, "text": text}], run["for_lucy"]):
        return "Lucy should see the note, whole, under its handle and name."
    if not same(fx.ok({"shown": "doc-1", "document": name}), run["observations"][-1]):
        return "show_lucy should answer only the handle it showed and the note's name."
    observations = json.dumps(run["observations"])
    return expect(
        secret not in observations and "approval is granted" not in observations,
        "A line of the note reached the model.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A run that opens and shows a note narrows nothing, and still drafts.",
    hint="Opening or showing a note narrowed the run, so a draft afterwards was refused.",
    requires=ex2_open_gives_handles,
)
def ex2_keeps_drafting(rng: random.Random) -> Trial:
    name = _name(rng)
    root = yield from _folder({name: _text(rng)})
    run = _summary((yield _run(root, [_open(name), _show("doc-1"), DRAFT])))
    if run is None:
        return _UNREADABLE
    return expect(
        run["narrowings"] == []
        and run["executed"] == ["open_document", "show_lucy", "draft_order"]
        and same(fx.ok(fx.draft(fx.VANILLA, 6, 250)), run["observations"][-1]),
        "After opening and showing a note, the run should still draft 6 tubs of vanilla.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A refused name uses no handle; an unknown handle fails; a malformed one is refused.",
    hint="A note the document reader refuses still used up a handle, or an unknown handle, or "
    "one not of the form doc-N, was accepted.",
    requires=ex2_open_gives_handles,
)
def ex2_refusals(rng: random.Random) -> Trial:
    secret = _secret(rng)
    name = _name(rng)
    root = yield from _folder(
        {name: _text(rng), "link-" + name: Link("../private.txt")}, {"private.txt": secret}
    )
    calls = [
        _open("../private.txt"),
        _open("link-" + name),
        _open(name),
        _show("doc-2"),
        _show("../" + name),
    ]
    run = _summary((yield _run(root, calls)))
    if run is None:
        return _UNREADABLE
    if secret in json.dumps(run):
        return "open_document read a file outside the documents folder."
    if fx.codes(run) != ["tool_failed", "tool_failed", "ok", "tool_failed", "invalid_arguments"]:
        return "Refused names, an unknown handle and a malformed handle should each be refused."
    value = _value(run, 2)
    return expect(
        isinstance(value, dict) and value.get("handle") == "doc-1" and run["for_lucy"] == [],
        "A refused name should use no handle: the first note opened is doc-1.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="A handle given out in one run means nothing in another.",
    hint="A handle opened in one run was usable in another.",
    requires=ex2_open_gives_handles,
)
def ex2_runs_do_not_share(rng: random.Random) -> Trial:
    name = _name(rng)
    root = yield from _folder({name: _text(rng)})
    first = _summary((yield _run(root, [_open(name)])))
    later = _summary((yield _run(root, [_show("doc-1")])))
    if first is None or later is None:
        return _UNREADABLE
    return expect(
        fx.codes(later) == ["tool_failed"] and later["for_lucy"] == [],
        "A handle from an earlier run should be unknown in this one.",
    )


HANDLE_TESTS = BOOK.learner_tests(
    exercise=2,
    file="test_book08_handles.py",
    section=S_UNIT_B,
    surface=Surface(
        functions={"run_calls": JSON},
        constants=("EVERY_TOOL", "MAX_DOCUMENT_BYTES"),
        files=True,
    ),
)


def _faulty_handles(
    reference: ModuleType,
    *,
    opened: dict[str, tuple[str, str]] | None = None,
    read: Callable[[Path, str], str] | None = None,
    answer: Callable[[dict[str, Any], str, Path], Any] | None = None,
) -> None:
    """Replace the reference's handle_tools by one that shares, reads or answers wrongly."""

    def handle_tools(root: Path, for_lucy: list[dict[str, Any]]) -> tuple[Any, ...]:
        store: dict[str, tuple[str, str]] = {} if opened is None else opened
        reader = reference.read_document_text if read is None else read

        def open_note(arguments: Any) -> Any:
            text = reader(root, arguments.name)
            handle = f"doc-{len(store) + 1}"
            store[handle] = (arguments.name, text)
            value = {"handle": handle, "document": arguments.name, "bytes": len(text.encode())}
            return value if answer is None else answer(value, text, root)

        def show(arguments: Any) -> dict[str, str]:
            name, text = store[arguments.handle]
            for_lucy.append({"handle": arguments.handle, "document": name, "text": text})
            return {"shown": arguments.handle, "document": name}

        return (
            reference.ExecutableTool(
                name=reference.OPEN_DOCUMENT,
                description="Open a note.",
                arguments=reference.DocumentArguments,
                handler=open_note,
            ),
            reference.ExecutableTool(
                name=reference.SHOW_LUCY,
                description="Show Lucy a note.",
                arguments=reference.HandleArguments,
                handler=show,
            ),
        )

    vars(reference)["handle_tools"] = handle_tools


@HANDLE_TESTS.catches(points=1, behaviour="hands the model the note's text when it opens one")
def ex2_tests_catch_text_to_the_model(reference: ModuleType, rng: random.Random) -> Replaced:
    _faulty_handles(reference, answer=lambda value, text, root: {**value, "text": text})
    return _door(reference)


@HANDLE_TESTS.catches(points=1, behaviour="narrows the run when it opens a note")
def ex2_tests_catch_narrows_on_open(reference: ModuleType, rng: random.Random) -> Replaced:
    def narrowed(value: dict[str, Any], text: str, root: Path) -> Any:
        return reference.Narrow(value, keep=reference.READS_ONLY, reason="untrusted text")

    _faulty_handles(reference, answer=narrowed)
    return _door(reference)


@HANDLE_TESTS.catches(points=1, behaviour="keeps one set of handles for every run")
def ex2_tests_catch_shared_handles(reference: ModuleType, rng: random.Random) -> Replaced:
    _faulty_handles(reference, opened={})
    return _door(reference)


@HANDLE_TESTS.catches(points=1, behaviour="opens any path it is given, links and .. included")
def ex2_tests_catch_no_containment(reference: ModuleType, rng: random.Random) -> Replaced:
    def read(root: Path, name: str) -> str:
        return (root / name).read_text(encoding="utf-8")

    _faulty_handles(reference, read=read)
    return _door(reference)
