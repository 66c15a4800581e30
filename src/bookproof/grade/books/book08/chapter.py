"""Exercise Book 8's baseline: what chapter 8's code, as the starter has it, already does."""

from __future__ import annotations

import json
import random

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book08.common import (
    _UNREADABLE,
    BOOK,
    CHAPTER_TOOLS,
    DRAFT,
    MAX_NAME,
    S_FOLDER,
    S_LABEL,
    S_NARROW,
    S_ORDER,
    _delimited,
    _folder,
    _name,
    _run,
    _secret,
    _summary,
    _text,
)
from bookproof.grade.files import Fifo, Link, Tree
from bookproof.grade.questions import expect, same

# --- chapter 8, as the starter already has it ------------------------------------------


@BOOK.baseline(
    points=1,
    section=S_LABEL,
    asks="read_document answers a note's text between its two marked lines, labelled untrusted.",
    hint="read_document must answer {'document', 'text', 'trust'}: the text between the lines "
    "marked with the start of its own SHA-256, and chapter 8's label.",
)
def ch8_reads_a_note(rng: random.Random) -> Trial:
    name, text = _name(rng), _text(rng)
    root = yield from _folder({name: text})
    run = _summary((yield _run(root, [["read_document", {"name": name}]], CHAPTER_TOOLS)))
    if run is None:
        return _UNREADABLE
    return expect(
        same(fx.ok(_delimited(name, text)), run["observations"][0] if run["observations"] else 0),
        "The note should come back whole, between its own two marked lines, with the label; "
        "a line in the note that looks like a closing line must stay inside.",
    )


@BOOK.baseline(
    points=2,
    section=S_FOLDER,
    asks="Names that lead outside the folder, through a link, or to a FIFO read nothing.",
    hint="read_document must refuse .., absolute paths, links, FIFOs and folders "
    "(tool_failed) and names over 200 characters (invalid_arguments), and read a note "
    "in a subfolder.",
)
def ch8_refuses_escapes(rng: random.Random) -> Trial:
    secret = _secret(rng)
    name, text = _name(rng), _text(rng)
    sub = fx.token(rng, 6)
    entries: Tree = {
        name: text,
        sub: {name: text},
        "link-" + name: Link("private.txt", absolute=True),
        "old": Link(".."),
        "inbox": Fifo(),
    }
    root = yield from _folder(entries, {"private.txt": secret + "\n"})
    refused = [
        ("../private.txt", "tool_failed"),
        (f"{sub}/../../private.txt", "tool_failed"),
        (f"{root}/{name}", "tool_failed"),
        ("link-" + name, "tool_failed"),
        ("old/private.txt", "tool_failed"),
        ("inbox", "tool_failed"),
        (sub, "tool_failed"),
        (name + "\x00.md", "tool_failed"),
        ("n" * (MAX_NAME + 1), "invalid_arguments"),
    ]
    rng.shuffle(refused)
    calls = [["read_document", {"name": n}] for n, _ in refused]
    calls.append(["read_document", {"name": f"{sub}/{name}"}])
    run = _summary((yield _run(root, calls, CHAPTER_TOOLS)))
    if run is None:
        return _UNREADABLE
    if secret in json.dumps(run):
        return "A file outside the documents folder reached the run."
    if fx.codes(run)[:-1] != [code for _, code in refused]:
        return "A name leading outside the folder, through a link, or to a FIFO was not refused."
    return expect(
        same(fx.ok(_delimited(f"{sub}/{name}", text)), run["observations"][-1]),
        "A note in a subfolder of the documents folder should still be read.",
    )


@BOOK.baseline(
    points=2,
    section=S_NARROW,
    asks="After a read, the run keeps only the tools that change nothing; a draft is refused.",
    hint="A read that succeeds returns Narrow with chapter 8's reads-only tools, so later calls "
    "to draft_order are refused tool_not_allowed and the record names the read.",
)
def ch8_read_narrows(rng: random.Random) -> Trial:
    name = _name(rng)
    root = yield from _folder({name: _text(rng)})
    calls = [["read_document", {"name": name}], DRAFT, ["list_stock", {}]]
    run = _summary((yield _run(root, calls, CHAPTER_TOOLS)))
    if run is None:
        return _UNREADABLE
    if fx.codes(run) != ["ok", "tool_not_allowed", "ok"]:
        return "After the read, draft_order should be refused and list_stock should still run."
    narrowings = run["narrowings"]
    if len(narrowings) != 1 or not isinstance(narrowings[0], dict):
        return "The run should record exactly one narrowing, the read's."
    seen = {key: narrowings[0].get(key) for key in ("call_id", "tool", "reason", "kept", "removed")}
    return expect(
        same(
            {
                "call_id": "g1",
                "tool": "read_document",
                "reason": f"untrusted text: {name}",
                "kept": ["list_stock", "read_document", "supplier"],
                "removed": ["draft_order"],
            },
            seen,
        ),
        "The narrowing should name the read's call, say 'untrusted text: <name>', keep "
        "list_stock, read_document and supplier, and remove draft_order.",
    )


@BOOK.baseline(
    points=1,
    section=S_ORDER,
    asks="A refused read narrows nothing; drafts before a read run, drafts after it do not.",
    hint="Only a read that succeeded returns Narrow: a refused name let no text in.",
)
def ch8_refused_read_narrows_nothing(rng: random.Random) -> Trial:
    name = _name(rng)
    root = yield from _folder({name: _text(rng)})
    calls = [
        ["read_document", {"name": "../" + name}],
        DRAFT,
        ["read_document", {"name": name}],
        DRAFT,
    ]
    run = _summary((yield _run(root, calls, CHAPTER_TOOLS)))
    if run is None:
        return _UNREADABLE
    if fx.codes(run) != ["tool_failed", "ok", "ok", "tool_not_allowed"]:
        return "The draft after a refused read should run; the draft after a read should not."
    calls_narrowed = [n.get("call_id") if isinstance(n, dict) else None for n in run["narrowings"]]
    return expect(calls_narrowed == ["g3"], "Only the read that succeeded should narrow the run.")
