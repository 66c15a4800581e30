"""The files a reader runs may never drift from what the chapter taught.

Every top-level function and class in the learner file must be defined
identically (same AST, positions ignored) by one top-level definition in the
chapter's listings, `python skip` listings included. A `python changes=NAME`
listing teaches the class it composes (compose.py), and the definition it
builds on is then taught no more. The checkpoint is held to
the same rule for every definition whose name a listing also defines; its own
glue (`main`, say) is free, because no listing teaches it.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bookproof.verify.chapter import Chapter

__all__ = ["Drift", "Role", "find_drift"]

# A learner file must consist of taught definitions; a checkpoint may add its own.
Role = Literal["learner", "checkpoint"]

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Drift:
    """A definition in a reader's file that no listing defines identically."""

    name: str
    line: int  # in the reader's file
    message: str
    diff: str  # ast.unparse of the closest listing definition against the file's


def _definitions(tree: ast.Module) -> list[_Definition]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]


def _fingerprint(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def find_drift(
    chapter: Chapter, path: Path, *, chapter_label: str, file_label: str, role: Role = "learner"
) -> tuple[list[Drift], str | None]:
    """The drifting definitions of `path`, and an error when it does not parse.

    The labels are how the two files are named in messages (paths as the reader typed them).
    """
    try:
        file_tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, ValueError, UnicodeDecodeError) as error:
        return [], f"{file_label}: cannot be parsed: {error}"

    taught: dict[str, list[tuple[ast.AST, int]]] = {}
    fingerprints: set[str] = set()
    # A definition a `changes=` listing builds on is taught no more: the file
    # must hold the composed one, or it would keep the version the text replaced.
    superseded = {
        (composition.base_line, composition.name)
        for composition in chapter.compositions.values()
        if composition.base_line is not None
    }
    for fence in chapter.fences:
        if fence.kind not in ("python", "raises", "skip"):
            continue
        composition = chapter.compositions.get(fence.line)
        if composition is not None:
            tree = composition.module
        elif fence.changes is not None:
            continue  # not composed: the run stopped with a format error naming it
        else:
            try:
                tree = ast.parse(fence.content)
            except (SyntaxError, ValueError):
                # A skipped listing may be a deliberate counter-example; it teaches no definition.
                continue
        for node in _definitions(tree):
            if (fence.line, node.name) in superseded:
                continue
            fingerprints.add(_fingerprint(node))
            taught.setdefault(node.name, []).append((node, fence.line))

    drifts: list[Drift] = []
    for node in _definitions(file_tree):
        if _fingerprint(node) in fingerprints:
            continue
        file_text = ast.unparse(node).splitlines()
        candidates = taught.get(node.name)
        if not candidates and role == "checkpoint":
            continue
        if not candidates:
            drifts.append(
                Drift(
                    name=node.name,
                    line=node.lineno,
                    message=f"`{node.name}` is defined in the learner file but in no listing",
                    diff="",
                )
            )
            continue
        # The closest listing is the one whose source differs least.
        best_node, best_line = max(
            candidates,
            key=lambda item: difflib.SequenceMatcher(
                a=ast.unparse(item[0]).splitlines(), b=file_text
            ).ratio(),
        )
        diff = "\n".join(
            difflib.unified_diff(
                ast.unparse(best_node).splitlines(),
                file_text,
                fromfile=f"listing ({chapter_label}:{best_line})",
                tofile=f"{role} ({file_label}:{node.lineno})",
                lineterm="",
            )
        )
        drifts.append(
            Drift(
                name=node.name,
                line=node.lineno,
                message=(
                    f"`{node.name}` differs from every listing that defines it "
                    f"(closest: {chapter_label}:{best_line})"
                ),
                diff=diff,
            )
        )
    return drifts, None
