"""--update: rewrite expected-output blocks from actual output, and nothing else.

Only the content lines of `output` and `checkpoint-output` blocks that failed
are replaced; every other byte of the file (line endings included) stays as it
was, so a chapter whose outputs already match is left byte for byte unchanged.
"""

from __future__ import annotations

import dataclasses
import re

from bookproof.verify.chapter import Chapter, Fence
from bookproof.verify.compare import normalise
from bookproof.verify.verdict import BlockVerdict, ChapterVerdict
from bookproof.verify.verification import mark_cascade

__all__ = ["UpdateRefused", "rewrite_fences", "update_chapter"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_NOT_CONTAINER = re.compile(r"[^>\s]")


class UpdateRefused(Exception):
    """A block cannot be rewritten safely (unclosed fence, output that would close it)."""


def _fence_body(fence: Fence, output: str, prefix: str, eol: str) -> list[str]:
    body = []
    for line in normalise(output):
        stripped = line.strip()
        if len(stripped) >= len(fence.markup) and set(stripped) == {fence.markup[0]}:
            raise UpdateRefused(
                f"line {fence.line}: the new output holds {stripped!r}, which would close the fence"
            )
        body.append((prefix + line).rstrip(" \t") if not line else prefix + line)
    return [line + eol for line in body]


def rewrite_fences(text: str, replacements: dict[Fence, str]) -> str:
    """`text` with the content of each fence replaced by its new output."""
    lines = _LINE.findall(text)
    for fence in sorted(replacements, key=lambda f: f.line, reverse=True):
        if not fence.closed:
            raise UpdateRefused(f"line {fence.line}: the fence is never closed")
        opening = lines[fence.line - 1]
        eol = opening[len(opening.rstrip("\r\n")) :] or "\n"
        # Quote markers stay on every content line; list markers become spaces.
        prefix = _NOT_CONTAINER.sub(" ", opening[: opening.find(fence.markup)])
        body = _fence_body(fence, replacements[fence], prefix, eol)
        lines[fence.line : fence.end_line - 2] = body
    return "".join(lines)


def update_chapter(chapter: Chapter, verdict: ChapterVerdict) -> ChapterVerdict:
    """Rewrite the chapter's failed output blocks on disk; return the verdict after it."""
    by_line = {fence.line: fence for fence in chapter.fences}
    replacements: dict[Fence, str] = {}
    fixed: set[tuple[str, int]] = set()
    blocks: list[BlockVerdict] = []
    mismatched = {failure.line for failure in verdict.failures if failure.kind == "output-mismatch"}
    for block in verdict.blocks:
        if (
            block.line in mismatched
            and block.updatable
            and block.output_line is not None
            and block.actual is not None
        ):
            replacements[by_line[block.output_line]] = block.actual
            fixed.add(("output-mismatch", block.line))
            block = dataclasses.replace(block, status="passed")
        blocks.append(block)
    if verdict.checkpoint_stdout is not None:
        for failure in verdict.failures:
            if failure.kind == "checkpoint-output" and failure.line in by_line:
                fence = by_line[failure.line]
                if fence.kind == "checkpoint-output":
                    replacements[fence] = verdict.checkpoint_stdout
                    fixed.add(("checkpoint-output", failure.line))
    if not replacements:
        return verdict
    new_text = rewrite_fences(chapter.text, replacements)
    if new_text != chapter.text:
        # An author may have saved the file while it was verified: their edit wins.
        if chapter.path.read_bytes() != chapter.text.encode("utf-8"):
            raise UpdateRefused("the file changed while it was being verified; run again")
        with chapter.path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(new_text)
    remaining = mark_cascade(
        [
            dataclasses.replace(failure, cascade_of=None)
            for failure in verdict.failures
            if not ((failure.kind, failure.line) in fixed and failure.file == verdict.display)
        ]
    )
    checkpoint = verdict.checkpoint
    if checkpoint == "failed" and not any(
        f.kind in ("checkpoint", "checkpoint-output") for f in remaining
    ):
        checkpoint = "ok"
    return dataclasses.replace(
        verdict,
        blocks=tuple(blocks),
        failures=tuple(remaining),
        checkpoint=checkpoint,
        updated=tuple(
            f"{verdict.display}:{fence.line}"
            for fence in sorted(replacements, key=lambda f: f.line)
        ),
    )
