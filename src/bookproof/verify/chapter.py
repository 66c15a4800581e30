"""Parsing a chapter's Markdown into typed fenced blocks, and pairing listings with outputs.

A real CommonMark parser (markdown-it-py) finds the fences, so a fence inside a
list or a quote, or a line that merely looks like a fence inside another fence,
is read exactly as a Markdown reader would see it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from bookproof.verify.environment import display_path
from bookproof.verify.files import UnreadableFile, read_regular_file, shown

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = [
    "Chapter",
    "ChapterError",
    "Composition",
    "Fence",
    "FenceKind",
    "Listing",
    "changes_of",
    "classify_info",
    "parse_chapter",
    "read_chapter",
    "split_lines",
]

FenceKind = Literal["python", "raises", "skip", "output", "checkpoint-output", "shown"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class ChapterError(Exception):
    """The chapter file cannot be read at all (missing, a folder, not UTF-8): a usage error."""


@dataclass(frozen=True)
class Fence:
    """One fenced block. `line` is the 1-based line of its opening fence."""

    kind: FenceKind
    info: str
    content: str
    line: int
    end_line: int  # 1-based line just after the block (exclusive end)
    closed: bool
    markup: str
    raises: str | None = None
    changes: str | None = None  # `python changes=NAME`: the class whose methods it replaces


@dataclass(frozen=True)
class Listing:
    """An executed `python` block and the `output` block paired with it, if any."""

    fence: Fence
    output: Fence | None
    # A `changes=` listing's code made whole (compose.py); None for any other listing.
    composed: ast.Module | None = None


@dataclass(frozen=True)
class Composition:
    """One `changes=` listing, made whole.

    `module` is the listing's code with its partial class replaced by the
    composed one: what the worker runs and what the learner file is held to.
    """

    name: str
    module: ast.Module
    methods: tuple[str, ...]  # the methods the listing replaces, in its order; () for a splice
    base_line: int | None  # the fence in this chapter the base came from; None: an earlier chapter
    base_where: str  # "file:line" of the base, for messages
    source: tuple[str, ...] = ()  # the composed definition's text
    lines: tuple[int | None, ...] = ()  # the chapter line of each line of `source`

    @property
    def definition(self) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef:
        return next(
            node
            for node in self.module.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == self.name
        )


@dataclass(frozen=True)
class Chapter:
    """A parsed chapter: its fences in order and what the format rules made of them."""

    path: Path
    text: str
    fences: tuple[Fence, ...]
    listings: tuple[Listing, ...]
    skipped: tuple[Fence, ...]
    checkpoint_outputs: tuple[Fence, ...]
    problems: tuple[str, ...] = field(default=())  # format errors: each names path:line
    warnings: tuple[str, ...] = field(default=())
    # The `changes=` listings made whole, by the line of their fence (see compose.py).
    compositions: Mapping[int, Composition] = field(default_factory=dict)


def split_lines(text: str) -> list[str]:
    """Lines as CommonMark counts them (any of \\r\\n, \\r, \\n ends a line)."""
    return _LINE_BREAK.split(text)


def classify_info(info: str) -> tuple[FenceKind, str | None]:
    """The fence kind for an info string, read exactly as book/FORMAT.md's table says."""
    words = info.split()
    if words == ["python"]:
        return "python", None
    if words == ["python", "skip"]:
        return "skip", None
    if len(words) == 2 and words[0] == "python" and words[1].startswith("raises="):
        name = words[1].removeprefix("raises=")
        if name.isidentifier():
            return "raises", name
        return "shown", None
    if changes_of(info) is not None:
        return "python", None
    if words == ["output"]:
        return "output", None
    if words == ["checkpoint-output"]:
        return "checkpoint-output", None
    return "shown", None


def changes_of(info: str) -> str | None:
    """The class a `python changes=NAME` listing changes, or None for any other info string."""
    words = info.split()
    if len(words) == 2 and words[0] == "python" and words[1].startswith("changes="):
        name = words[1].removeprefix("changes=")
        if name.isidentifier():
            return name
    return None


_CONTAINER_PREFIX = re.compile(r"^[\s>]*")


def _is_closing(line: str, markup: str) -> bool:
    # Quote markers and indentation belong to the container, not to the fence.
    stripped = _CONTAINER_PREFIX.sub("", line).rstrip()
    return len(stripped) >= len(markup) and set(stripped) == {markup[0]}


def _blank_between(lines: list[str], start: int, end: int) -> bool:
    """Whether 0-based lines [start, end) hold nothing but quote markers and spaces."""
    return all(not line.strip().strip(">").strip() for line in lines[start:end])


_parser: MarkdownIt | None = None


def _markdown() -> MarkdownIt:
    # Imported and built on first use, once per process: markdown-it's import
    # is most of the verifier's start-up, and the worker never needs it.
    global _parser
    if _parser is None:
        from markdown_it import MarkdownIt

        _parser = MarkdownIt("commonmark")
    return _parser


def read_chapter(path: Path) -> Chapter:
    """Read and parse a chapter file; one that cannot be read or decoded is a ChapterError."""
    try:
        raw = read_regular_file(path)
    except UnreadableFile as error:
        raise ChapterError(f"{shown(path)}: cannot read the chapter: {error}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ChapterError(f"{shown(path)}: not UTF-8 text: {error}") from None
    return parse_chapter(path, text)


def parse_chapter(path: Path, text: str) -> Chapter:
    """Split `text` into fences and pair each `output` with the listing just above it."""
    lines = split_lines(text)
    where = display_path(path)
    fences: list[Fence] = []
    warnings: list[str] = []
    for token in _markdown().parse(text):
        if token.type != "fence" or token.map is None:
            continue
        start, end = token.map
        info = token.info.strip()
        kind, raises = classify_info(info)
        closed = (
            end - 1 > start and end - 1 < len(lines) and _is_closing(lines[end - 1], token.markup)
        )
        fences.append(
            Fence(
                kind=kind,
                info=info,
                content=token.content,
                line=start + 1,
                end_line=end + 1,
                closed=closed,
                markup=token.markup,
                raises=raises,
                changes=changes_of(info),
            )
        )
        words = info.split()
        if kind == "shown" and words and words[0] in ("python", "output", "checkpoint-output"):
            warnings.append(
                f"{where}:{start + 1}: info string {info!r} is not in the format's table; "
                "the block is shown only, never run or compared"
            )

    # A fence never closed runs to the end of the chapter (or of its list item
    # or quote), swallowing the prose and blocks after it: always a mistake.
    problems = [
        (fence.line, f"the {fence.markup} fence opened here is never closed")
        for fence in fences
        if not fence.closed
    ]
    listings: list[Listing] = []
    pending: Fence | None = None  # the last listing still waiting for its output
    for fence in fences:
        if fence.kind == "output":
            if pending is not None and _blank_between(lines, pending.end_line - 1, fence.line - 1):
                listings.append(Listing(pending, fence))
                pending = None
                continue
            problems.append(
                (
                    fence.line,
                    "`output` block with no `python` block just before it "
                    "(only blank lines may separate them)",
                )
            )
            continue
        if pending is not None:
            listings.append(Listing(pending, None))
            pending = None
        if fence.kind in ("python", "raises"):
            pending = fence
    if pending is not None:
        listings.append(Listing(pending, None))

    return Chapter(
        path=path,
        text=text,
        fences=tuple(fences),
        listings=tuple(listings),
        skipped=tuple(f for f in fences if f.kind == "skip"),
        checkpoint_outputs=tuple(f for f in fences if f.kind == "checkpoint-output"),
        problems=tuple(f"{where}:{line}: {problem}" for line, problem in sorted(problems)),
        warnings=tuple(warnings),
    )
