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
holds the learner file and the checkpoint to it. The composed tree keeps the
chapter's own line numbers where it can, so a traceback through a method
names the line a reader can open.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bookproof.verify.chapter import Chapter, Fence, Listing
from bookproof.verify.environment import display_path

__all__ = ["Composition", "compose_chapter", "final_definitions", "worker_fields"]

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_Method = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Composition:
    """One `changes=` listing, made whole.

    `module` is the listing's code with its partial class replaced by the
    composed one: what the worker runs and what the learner file is held to.
    """

    name: str
    module: ast.Module
    methods: tuple[str, ...]  # the methods the listing replaces, in its order
    base_line: int | None  # the fence in this chapter the base came from; None: an earlier chapter
    base_where: str  # "file:line" of the base, for messages

    @property
    def definition(self) -> ast.ClassDef:
        return next(
            node
            for node in self.module.body
            if isinstance(node, ast.ClassDef) and node.name == self.name
        )


@dataclass(frozen=True)
class _Known:
    """The latest definition of a name so far, and where it came from."""

    node: _Definition
    line: int | None  # fence line in the chapter being composed; None for an earlier chapter
    where: str


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


def _compose(name: str, fence: Fence, known: dict[str, _Known]) -> Composition:
    try:
        module = _parsed(fence)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None)
        at = f" at line {fence.line + line}" if isinstance(line, int) else ""
        message = getattr(error, "msg", str(error))
        raise _ChangeError(
            f"the `changes={name}` listing is not valid Python{at}: {message}"
        ) from None
    partials = [n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name]
    if len(partials) != 1:
        raise _ChangeError(
            f"a `changes={name}` listing shows `class {name}:` once, holding the methods "
            "it replaces"
        )
    partial = partials[0]
    base = known.get(name)
    if base is None:
        raise _ChangeError(
            f"`changes={name}`: no earlier listing of this chapter or of an earlier chapter "
            f"defines {name}"
        )
    if not isinstance(base.node, ast.ClassDef):
        raise _ChangeError(
            f"`changes={name}`: {name} is a function ({base.where}); a changes listing "
            "replaces methods of a class, so show a changed function whole"
        )
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
    return Composition(
        name=name,
        module=module,
        methods=tuple(replaced),
        base_line=base.line,
        base_where=base.where,
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
        for node in module.body:
            if isinstance(node, _Definition):
                known[node.name] = _Known(
                    node, fence.line if own else None, f"{where}:{fence.line}"
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
