"""Changes shown as changes: a `python changes=NAME` listing made whole.

A chapter that changes one method of a class it (or an earlier chapter)
defined in full may show only that method, inside the class's own line:

    ```python changes=Dispatcher
    class Dispatcher:
        def attempt(self, call: ToolCall) -> dict[str, Any]:
            ...
    ```

The reader sees what changed; the verifier composes the whole class (the
latest full or composed definition of `Dispatcher` before this listing, with
the listing's methods put in place of the ones of the same name, in their
original order), runs that composed class in the chapter's namespace, and
holds the learner file and the checkpoint to it.

A function (or a class changed inside a method) is shown with `# ...` lines
instead: each stands for the earlier definition's lines between the shown
line just before it and the shown line just after it, which must both be
lines of that definition; everything else shown replaces what it stood
between.

The composed tree keeps the chapter's own line numbers where it can, so a
traceback through a composed definition names a line a reader can open.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bookproof.verify.chapter import Chapter, Composition, Fence, Listing
from bookproof.verify.environment import display_path

__all__ = ["SNIP", "Composition", "compose_chapter", "final_definitions", "worker_fields"]

# A line of a changed definition that stands for the lines it keeps.
SNIP = "# ..."

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_Method = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class _Known:
    """The latest definition of a name so far, and where it came from."""

    node: _Definition
    line: int | None  # fence line in the chapter being composed; None for an earlier chapter
    where: str
    # The definition's text as the chapter shows it (composed, for a change), and
    # the chapter line of each of its lines; None for a line of an earlier chapter.
    source: tuple[str, ...] = ()
    lines: tuple[int | None, ...] = ()


class _ChangeError(Exception):
    """A `changes=` listing that cannot be composed; the message says why."""


def _parsed(fence: Fence) -> ast.Module:
    """The fence's code on the chapter's own line numbers."""
    tree = ast.parse(fence.content)
    return ast.increment_lineno(tree, fence.line)


def _flattened(node: _Definition, line: int) -> _Definition:
    """A copy of `node` placed entirely on `line`: a definition from another
    chapter's file has no lines in this one, so tracebacks through it point at
    the listing that composed it."""
    moved = copy.deepcopy(node)
    for child in ast.walk(moved):
        if "lineno" in child._attributes:
            child.lineno = child.end_lineno = line  # type: ignore[attr-defined]
            child.col_offset = child.end_col_offset = 0  # type: ignore[attr-defined]
    return moved


def _header(node: ast.ClassDef) -> str:
    """The class line (decorators, name, bases, keywords) as a comparable string."""
    head = copy.copy(node)
    head.body = []
    return ast.dump(head, include_attributes=False)


def _extent(lines: Sequence[str], node: _Definition, first: int) -> tuple[int, int]:
    """The 0-based first and last line of `node` in `lines` (a listing's content,
    whose line 0 is chapter line `first`): decorators included, and the comment
    lines that close its body (a `# ...` at the end belongs to it)."""
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - first
    end = (node.end_lineno or node.lineno) - first
    while end + 1 < len(lines):
        text = lines[end + 1]
        indent = len(text) - len(text.lstrip())
        if text.strip() and not (text.lstrip().startswith("#") and indent > node.col_offset):
            break
        end += 1
    while end > start and not lines[end].strip():
        end -= 1
    return start, end


def _header_line(lines: Sequence[str], extent: tuple[int, int]) -> int:
    """The `def`/`class` line of an extent that may start with decorators."""
    index = extent[0]
    while lines[index].startswith("@"):
        index += 1
    return index


def _is_snip(text: str) -> bool:
    return text.strip().startswith(SNIP)


def _remapped(module: ast.Module, chapter_line: Sequence[int]) -> ast.Module:
    """`module`'s positions moved from its text's lines to the chapter's, through
    `chapter_line` (0-based text line -> chapter line). A node spanning lines of
    two listings keeps a valid range: it ends no earlier than it starts."""
    for node in ast.walk(module):
        if "lineno" not in node._attributes:
            continue
        start = chapter_line[node.lineno - 1]  # type: ignore[attr-defined]
        end = chapter_line[(node.end_lineno or node.lineno) - 1]  # type: ignore[attr-defined]
        node.lineno = start  # type: ignore[attr-defined]
        node.end_lineno = max(start, end)  # type: ignore[attr-defined]
        if node.end_lineno == start and (node.end_col_offset or 0) < node.col_offset:  # type: ignore[attr-defined]
            node.end_col_offset = node.col_offset  # type: ignore[attr-defined]
    return module


def _find(source: Sequence[str], text: str, start: int) -> int | None:
    for index in range(start, len(source)):
        if source[index].rstrip() == text.rstrip():
            return index
    return None


def _splice(
    name: str,
    fence: Fence,
    extent: tuple[int, int],
    base: _Known,
    snips: list[int],
) -> Composition:
    """Compose a definition shown with `# ...` lines, each standing for the base's
    lines between the shown line before it and the shown line after it."""
    lines = fence.content.split("\n")
    first = fence.line + 1

    def at(index: int) -> int:
        return first + index

    start, end = extent
    segments: list[list[int]] = [[]]
    for index in range(start, end + 1):
        if index in snips:
            segments.append([])
        else:
            segments[-1].append(index)
    composed: list[tuple[str, int | None]] = []
    position = 0
    for number, snip in enumerate(snips):
        before, after = segments[number], segments[number + 1]
        if not before:
            raise _ChangeError(f"line {at(snip)}: a `# ...` line needs a shown line before it")
        anchor = lines[before[-1]]
        found = _find(base.source, anchor, position)
        if found is None:
            raise _ChangeError(
                f"line {at(before[-1])}: the line before a `# ...` line must be a line of "
                f"{name} as {base.where} has it, after the lines matched so far: "
                f"{anchor.strip()!r}"
            )
        composed += [(lines[index], at(index)) for index in before]
        resume = len(base.source)
        if after:
            following = _find(base.source, lines[after[0]], found + 1)
            if following is None:
                raise _ChangeError(
                    f"line {at(after[0])}: the line after a `# ...` line must be a line of "
                    f"{name} as {base.where} has it, after the lines matched so far: "
                    f"{lines[after[0]].strip()!r}"
                )
            resume = following
        composed += [
            (base.source[index], base.lines[index] if base.lines[index] else at(snip))
            for index in range(found + 1, resume)
        ]
        position = resume
    composed += [(lines[index], at(index)) for index in segments[-1]]
    text = [*lines[:start], *(line for line, _ in composed), *lines[end + 1 :]]
    chapter_line = [
        *(at(index) for index in range(start)),
        *(line if line is not None else at(start) for _, line in composed),
        *(at(index) for index in range(end + 1, len(lines))),
    ]
    try:
        module = ast.parse("\n".join(text))
    except (SyntaxError, ValueError) as error:
        raise _ChangeError(
            f"{name} composed from {base.where} and this listing is not valid Python: "
            f"{getattr(error, 'msg', error)}"
        ) from None
    return Composition(
        name=name,
        module=_remapped(module, chapter_line),
        methods=(),
        base_line=base.line,
        base_where=base.where,
        source=tuple(line for line, _ in composed),
        lines=tuple(line for _, line in composed),
    )


def _replaced_text(
    base: _Known, fence: Fence, replaced: dict[str, _Method]
) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """The text of a class whose methods a listing replaced, for a later change to splice."""
    try:
        tree = ast.parse("\n".join(base.source))
    except (SyntaxError, ValueError):
        return (), ()
    lines = fence.content.split("\n")
    first = fence.line + 1
    spans = {}
    cls = tree.body[0] if tree.body else None
    if isinstance(cls, ast.ClassDef):
        for statement in cls.body:
            if isinstance(statement, _Method) and statement.name in replaced:
                spans[_extent(base.source, statement, 1)[0]] = (
                    _extent(base.source, statement, 1)[1],
                    _extent(lines, replaced[statement.name], first),
                )
    text: list[str] = []
    where: list[int | None] = []
    index = 0
    while index < len(base.source):
        if index in spans:
            last, (start, end) = spans[index]
            text += lines[start : end + 1]
            where += [first + k for k in range(start, end + 1)]
            index = last + 1
            continue
        text.append(base.source[index])
        where.append(base.lines[index] if index < len(base.lines) else None)
        index += 1
    return tuple(text), tuple(where)


def _text_extent(lines: Sequence[str], name: str) -> tuple[int, int] | None:
    """The 0-based first and last line of the top-level `def name` or `class name`
    in `lines`, read as text: a definition shown with `# ...` lines need not be
    valid Python on its own (a snipped bracket stays open)."""
    header = re.compile(rf"(?:async\s+def|def|class)\s+{re.escape(name)}\b")
    for index, line in enumerate(lines):
        if not header.match(line):
            continue
        start = index
        while start > 0 and lines[start - 1].startswith("@"):
            start -= 1
        end = index
        for following in range(index + 1, len(lines)):
            text = lines[following]
            # Inside a top-level definition only its signature's closing line
            # (and comments) may start at column 0.
            if text.strip() and not text[0].isspace() and not text.startswith((")", "#")):
                break
            end = following
        while end > index and not lines[end].strip():
            end -= 1
        return start, end
    return None


def _compose(name: str, fence: Fence, known: dict[str, _Known]) -> Composition:
    lines = fence.content.split("\n")
    extent = _text_extent(lines, name)
    snips = (
        [index for index in range(extent[0] + 1, extent[1] + 1) if _is_snip(lines[index])]
        if extent is not None
        else []
    )
    base = known.get(name)
    if extent is not None and snips:
        if base is None:
            raise _ChangeError(
                f"`changes={name}`: no earlier listing of this chapter or of an earlier "
                f"chapter defines {name}"
            )
        shown_class = lines[_header_line(lines, extent)].startswith("class")
        if shown_class != isinstance(base.node, ast.ClassDef):
            raise _ChangeError(
                f"`changes={name}`: the listing and {base.where} define {name} as "
                "different kinds of thing (a class and a function)"
            )
        return _splice(name, fence, extent, base, snips)
    try:
        module = _parsed(fence)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        at = f" at line {fence.line + line}" if isinstance(line, int) else ""
        message = getattr(error, "msg", str(error))
        raise _ChangeError(
            f"the `changes={name}` listing is not valid Python{at}: {message}"
        ) from None
    targets = [n for n in module.body if isinstance(n, _Definition) and n.name == name]
    if len(targets) != 1:
        raise _ChangeError(
            f"a `changes={name}` listing shows `class {name}:` (or `def {name}`) once, "
            "holding what it changes"
        )
    target = targets[0]
    if base is None:
        raise _ChangeError(
            f"`changes={name}`: no earlier listing of this chapter or of an earlier chapter "
            f"defines {name}"
        )
    if not isinstance(base.node, ast.ClassDef) or not isinstance(target, ast.ClassDef):
        raise _ChangeError(
            f"`changes={name}`: {name} is a function ({base.where}); show it with a "
            "`# ...` line for each stretch it keeps, or whole"
        )
    partial = target
    if _header(partial) != _header(base.node):
        raise _ChangeError(
            f"line {partial.lineno}: `class {name}` is written differently from the "
            f"definition it changes ({base.where}); a changes listing keeps the class line "
            "and replaces methods only"
        )
    replaced: dict[str, _Method] = {}
    for statement in partial.body:
        if not isinstance(statement, _Method):
            raise _ChangeError(
                f"line {statement.lineno}: a `changes={name}` listing holds only the methods "
                f"it replaces, not a {type(statement).__name__} statement"
            )
        if statement.name in replaced:
            raise _ChangeError(f"line {statement.lineno}: `{statement.name}` is shown twice")
        replaced[statement.name] = statement
    existing = [statement.name for statement in base.node.body if isinstance(statement, _Method)]
    for method in replaced.values():
        if method.name not in existing:
            raise _ChangeError(
                f"line {method.lineno}: `{method.name}` is not a method of {name} "
                f"({base.where} defines {', '.join(existing) or 'none'}); a changes listing "
                f"replaces methods {name} has, so show the class whole to add one"
            )
    whole = base.node if base.line is not None else _flattened(base.node, partial.lineno)
    composed = copy.deepcopy(whole)
    assert isinstance(composed, ast.ClassDef)
    composed.body = [
        replaced.get(statement.name, statement) if isinstance(statement, _Method) else statement
        for statement in composed.body
    ]
    module.body = [composed if node is partial else node for node in module.body]
    source, where = _replaced_text(base, fence, replaced)
    return Composition(
        name=name,
        module=module,
        methods=tuple(replaced),
        base_line=base.line,
        base_where=base.where,
        source=source,
        lines=where,
    )


def _definitions_of(
    chapter: Chapter,
    known: dict[str, _Known],
    *,
    own: bool,
    problems: list[str] | None = None,
) -> dict[int, Composition]:
    """Walk the chapter's listings in order, composing each `changes=` one against
    `known`, which is updated with every definition met. `own` says whether
    the chapter is the one being verified (its fence lines then mean something)."""
    where = display_path(chapter.path)
    compositions: dict[int, Composition] = {}
    for fence in chapter.fences:
        if fence.kind not in ("python", "raises", "skip"):
            continue
        composition: Composition | None = None
        if fence.changes is not None:
            try:
                composition = _compose(fence.changes, fence, known)
            except _ChangeError as error:
                if problems is not None:
                    problems.append(f"{where}:{fence.line}: {error}")
                continue
            compositions[fence.line] = composition
            module = composition.module
        else:
            try:
                module = _parsed(fence)
            except (SyntaxError, ValueError):
                continue  # a counter-example, or a listing whose run will report it
        content = fence.content.split("\n")
        for node in module.body:
            if not isinstance(node, _Definition):
                continue
            if composition is not None and node.name == composition.name:
                source, lines = composition.source, composition.lines
            else:
                start, end = _extent(content, node, fence.line + 1)
                source = tuple(content[start : end + 1])
                lines = tuple(fence.line + 1 + index for index in range(start, end + 1))
            known[node.name] = _Known(
                node,
                fence.line if own else None,
                f"{where}:{fence.line}",
                source,
                lines if own else (None,) * len(source),
            )
    return compositions


def final_definitions(chapters: Iterable[Chapter]) -> dict[str, _Known]:
    """The last definition of each name after reading `chapters` in order, composed."""
    known: dict[str, _Known] = {}
    for chapter in chapters:
        _definitions_of(chapter, known, own=False)
    return known


def compose_chapter(chapter: Chapter, earlier: Callable[[], Sequence[Chapter]]) -> Chapter:
    """`chapter` with its `changes=` listings composed, and a problem for each that cannot be.

    `earlier` gives the chapters before it in the book, read only when one of
    this chapter's listings changes a definition this chapter does not give.
    """
    if not any(fence.changes is not None for fence in chapter.fences):
        return chapter
    own_names = {
        node.name
        for fence in chapter.fences
        if fence.changes is None and fence.kind in ("python", "raises", "skip")
        for node in _top_definitions(fence)
    }
    needs_earlier = any(
        fence.changes is not None and fence.changes not in own_names for fence in chapter.fences
    )
    known = final_definitions(earlier()) if needs_earlier else {}
    problems: list[str] = []
    compositions = _definitions_of(chapter, known, own=True, problems=problems)
    listings = tuple(
        dataclasses.replace(listing, composed=compositions[listing.fence.line].module)
        if listing.fence.line in compositions
        else listing
        for listing in chapter.listings
    )
    return dataclasses.replace(
        chapter,
        listings=listings,
        compositions=compositions,
        problems=tuple(sorted((*chapter.problems, *problems), key=_line_of)),
    )


def _line_of(problem: str) -> tuple[str, int]:
    where = problem.partition(": ")[0]
    path, _, line = where.rpartition(":")
    return (path, int(line)) if line.isdigit() else (where, 0)


def _top_definitions(fence: Fence) -> list[_Definition]:
    try:
        tree = ast.parse(fence.content)
    except (SyntaxError, ValueError):
        return []
    return [node for node in tree.body if isinstance(node, _Definition)]


def worker_fields(listing: Listing) -> dict[str, str]:
    """What the worker needs beyond a listing's source to run it composed: the
    composed module, pickled; the worker compiles it on its own line numbers."""
    if listing.composed is None:
        return {}
    import pickle

    return {"tree": pickle.dumps(listing.composed).hex()}
