"""Exercise Book 8, Unit A: `list_documents`, and the learner's tests of it."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import stat
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
    LIST,
    MAX_LISTED,
    S_UNIT_A,
    UNTRUSTED,
    Replaced,
    _door,
    _folder,
    _listed,
    _name,
    _notes,
    _run,
    _secret,
    _strays,
    _summary,
    _value,
)
from bookproof.grade.files import Fifo
from bookproof.grade.questions import expect, same

# --- exercise 1: listing the notes ---------------------------------------------------------


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="list_documents lists the notes in the folder by name, with their sizes and the label.",
    hint="For a folder of notes, the listing did not give each note's name and size, sorted by "
    "name, with nothing passed over and marked untrusted.",
)
def ex1_lists_notes(rng: random.Random) -> Trial:
    notes = _notes(rng, rng.randint(3, 6))
    root = yield from _folder(notes)
    run = _summary((yield _run(root, [LIST])))
    if run is None:
        return _UNREADABLE
    return expect(
        same({"documents": _listed(notes), "passed_over": 0, "trust": UNTRUSTED}, _value(run, 0)),
        "The listing should name every note, sorted by name, with its size in bytes.",
    )


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="Links, folders, FIFOs, hidden, oversized and invisibly named files are passed over.",
    hint="The listing named an entry that is not a plain, visible note within the size limit "
    "(a link, a folder, a FIFO, a hidden, oversized or invisibly named file), or did not "
    "count it as passed over.",
)
def ex1_passes_over(rng: random.Random) -> Trial:
    secret = _secret(rng)
    notes = _notes(rng, rng.randint(1, 4))
    strays = _strays(rng, rng.choice(sorted(notes)))
    root = yield from _folder({**notes, **strays}, {"private.txt": secret + "\n"})
    run = _summary((yield _run(root, [LIST])))
    if run is None:
        return _UNREADABLE
    if secret in json.dumps(run):
        return "Something behind a link reached the run."
    value = _value(run, 0)
    if not isinstance(value, dict) or not same(_listed(notes), value.get("documents")):
        return (
            "Only the plain notes should be listed: not links, folders, FIFOs, hidden files, "
            "files over 4,096 bytes, or names a person cannot read."
        )
    return expect(
        same(len(strays), value.get("passed_over")),
        f"The folder holds {len(strays)} entries that should be counted as passed over.",
    )


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="At most 50 names are listed, the first by name; the rest are counted.",
    hint="A folder of more notes than the limit was not cut at the limit by name, with the "
    "rest counted as passed over.",
    requires=ex1_lists_notes,
)
def ex1_bounded(rng: random.Random) -> Trial:
    extra = rng.randint(1, 9)
    notes = _notes(rng, MAX_LISTED + extra)
    root = yield from _folder(notes)
    run = _summary((yield _run(root, [LIST])))
    if run is None:
        return _UNREADABLE
    value = _value(run, 0)
    listed = _listed(notes)
    return expect(
        isinstance(value, dict)
        and same(listed[:MAX_LISTED], value.get("documents"))
        and same(extra, value.get("passed_over")),
        f"With {MAX_LISTED + extra} notes, the first {MAX_LISTED} by name should be listed "
        f"and {extra} counted.",
    )


@BOOK.exercise(
    1,
    points=2,
    section=S_UNIT_A,
    asks="A listing that names a note narrows the run like a read; an empty one narrows nothing.",
    hint="A listing that names a note did not narrow the run, or a listing that names none "
    "narrowed it.",
    requires=ex1_lists_notes,
)
def ex1_listing_narrows(rng: random.Random) -> Trial:
    named = yield from _folder(_notes(rng, rng.randint(1, 3)))
    empty = yield from _folder({"." + _name(rng): "hidden\n", _name(rng): Fifo()})
    run = _summary((yield _run(named, [LIST, DRAFT])))
    if run is None:
        return _UNREADABLE
    narrowings = run["narrowings"]
    first = narrowings[0] if narrowings and isinstance(narrowings[0], dict) else {}
    kept, removed = first.get("kept"), first.get("removed")
    if not (
        len(narrowings) == 1
        and first.get("call_id") == "g1"
        and first.get("tool") == "list_documents"
        and isinstance(kept, list)
        and {"list_documents", "read_document", "list_stock"} <= set(kept)
        and isinstance(removed, list)
        and "draft_order" in removed
        and fx.codes(run) == ["ok", "tool_not_allowed"]
    ):
        return "A listing that names a note should narrow the run as a read does."
    run = _summary((yield _run(empty, [LIST, DRAFT])))
    if run is None:
        return _UNREADABLE
    return expect(
        run["narrowings"] == [] and fx.codes(run) == ["ok", "ok"],
        "A listing that names nothing let no outside text in: it should narrow nothing.",
    )


LISTING_TESTS = BOOK.learner_tests(
    exercise=1,
    file="test_book08_listing.py",
    section=S_UNIT_A,
    surface=Surface(
        functions={"run_calls": JSON},
        constants=("EVERY_TOOL", "MAX_DOCUMENT_BYTES", "MAX_DOCUMENT_NAME", "MAX_LISTED"),
        files=True,
    ),
)


def _scan_faultily(reference: ModuleType, *, follow_links: bool, hidden: bool) -> None:
    """Replace the reference's scan by one that follows links, or lists hidden and large files."""

    def listed_notes(root: Path) -> tuple[list[dict[str, Any]], int]:
        listed: list[dict[str, Any]] = []
        passed_over = 0
        with os.scandir(root) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=follow_links)
                except OSError:
                    passed_over += 1
                    continue
                if (
                    (entry.name.startswith(".") and not hidden)
                    or not stat.S_ISREG(info.st_mode)
                    or (info.st_size > reference.MAX_DOCUMENT_BYTES and not hidden)
                    or len(entry.name) > reference.MAX_DOCUMENT_NAME
                    or not reference.visible_name(entry.name)
                ):
                    passed_over += 1
                else:
                    listed.append({"name": entry.name, "bytes": info.st_size})
        listed.sort(key=lambda note: str(note["name"]))
        limit = reference.MAX_LISTED
        return listed[:limit], passed_over + max(0, len(listed) - limit)

    # The module's own namespace: every caller inside it looks the name up there.
    vars(reference)["listed_notes"] = listed_notes


def _rewrap_listing(reference: ModuleType, rewrap: Callable[[Any, frozenset[str]], Any]) -> None:
    """Replace the reference's list_documents by one whose answers `rewrap` changes."""
    original = reference.list_documents_tool

    def list_documents_tool(root: Path, *, keep: frozenset[str] = reference.READS_ONLY) -> Any:
        tool = original(root, keep=keep)
        return dataclasses.replace(
            tool, handler=lambda arguments: rewrap(tool.handler(arguments), keep)
        )

    vars(reference)["list_documents_tool"] = list_documents_tool


@LISTING_TESTS.catches(points=1, behaviour="lists a link as if it were the note it leads to")
def ex1_tests_catch_followed_links(reference: ModuleType, rng: random.Random) -> Replaced:
    _scan_faultily(reference, follow_links=True, hidden=False)
    return _door(reference)


@LISTING_TESTS.catches(points=1, behaviour="lists hidden files and files over 4,096 bytes")
def ex1_tests_catch_hidden_and_large(reference: ModuleType, rng: random.Random) -> Replaced:
    _scan_faultily(reference, follow_links=False, hidden=True)
    return _door(reference)


@LISTING_TESTS.catches(points=1, behaviour="never narrows the run, whatever it lists")
def ex1_tests_catch_never_narrows(reference: ModuleType, rng: random.Random) -> Replaced:
    def plain(value: Any, keep: frozenset[str]) -> Any:
        return value.value if isinstance(value, reference.Narrow) else value

    _rewrap_listing(reference, plain)
    return _door(reference)


@LISTING_TESTS.catches(points=1, behaviour="narrows the run even when it lists nothing")
def ex1_tests_catch_narrows_when_empty(reference: ModuleType, rng: random.Random) -> Replaced:
    def always(value: Any, keep: frozenset[str]) -> Any:
        if isinstance(value, reference.Narrow):
            return value
        return reference.Narrow(value, keep=keep, reason="untrusted text: the names of the notes")

    _rewrap_listing(reference, always)
    return _door(reference)
