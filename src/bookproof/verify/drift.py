"""The learner file may never drift from what the chapter taught.

Every top-level function and class in the learner file must be defined
identically (same AST, positions ignored) by one top-level definition in the
chapter's listings, `python skip` listings included.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from pathlib import Path

from bookproof.verify.chapter import Chapter

__all__ = ["Drift", "find_drift"]

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Drift:
    """A learner definition no listing defines identically."""

    name: str
    line: int  # in the learner file
    message: str
    diff: str  # ast.unparse of the closest listing definition against the learner's


def _definitions(tree: ast.Module) -> list[_Definition]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]


def _fingerprint(node: ast.AST) -> str:
    return ast.dump(node, include_attributes=False)


def find_drift(
    chapter: Chapter, learner: Path, *, chapter_label: str, learner_label: str
) -> tuple[list[Drift], str | None]:
    """The drifting definitions, and an error when the learner file does not parse.

    The labels are how the two files are named in messages (paths as the reader typed them).
    """
    try:
        learner_tree = ast.parse(learner.read_text(encoding="utf-8"), filename=str(learner))
    except (SyntaxError, ValueError, UnicodeDecodeError) as error:
        return [], f"{learner_label}: cannot be parsed: {error}"

    taught: dict[str, list[tuple[ast.AST, int]]] = {}
    fingerprints: set[str] = set()
    for fence in chapter.fences:
        if fence.kind not in ("python", "raises", "skip"):
            continue
        try:
            tree = ast.parse(fence.content)
        except (SyntaxError, ValueError):
            # A skipped listing may be a deliberate counter-example; it teaches no definition.
            continue
        for node in _definitions(tree):
            fingerprints.add(_fingerprint(node))
            taught.setdefault(node.name, []).append((node, fence.line))

    drifts: list[Drift] = []
    for node in _definitions(learner_tree):
        if _fingerprint(node) in fingerprints:
            continue
        learner_text = ast.unparse(node).splitlines()
        candidates = taught.get(node.name)
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
                a=ast.unparse(item[0]).splitlines(), b=learner_text
            ).ratio(),
        )
        diff = "\n".join(
            difflib.unified_diff(
                ast.unparse(best_node).splitlines(),
                learner_text,
                fromfile=f"listing ({chapter_label}:{best_line})",
                tofile=f"learner ({learner_label}:{node.lineno})",
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
