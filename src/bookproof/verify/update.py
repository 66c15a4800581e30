"""--update: rewrite expected-output blocks from actual output, and nothing else.

Only the content lines of `output` and `checkpoint-output` blocks that failed
are replaced; every other byte of the file (line endings included) stays as it
was, so a chapter whose outputs already match is left byte for byte unchanged.
The new text is written to a temporary file beside the chapter and renamed
over it: a full disk, a crash or Ctrl-C leaves the old chapter whole. Output
that the block would read back as a wildcard is never written: the check
would quietly become looser than what the listing printed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import tempfile
from pathlib import Path

from bookproof.verify.chapter import Chapter, Fence
from bookproof.verify.compare import WILDCARD, normalise
from bookproof.verify.judge import mark_cascade
from bookproof.verify.verdict import BlockVerdict, ChapterVerdict

__all__ = ["UpdateRefused", "rewrite_fences", "update_chapter"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_NOT_CONTAINER = re.compile(r"[^>\s]")


class UpdateRefused(Exception):
    """The chapter cannot be rewritten safely: an unclosed fence, output that would close
    its block or read back as a wildcard, a chapter changed, deleted or unwritable."""


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


def _replace(chapter: Chapter, new_text: str) -> None:
    """Write `new_text` over the chapter atomically, unless someone changed it meanwhile."""
    path = chapter.path
    try:
        on_disk = path.read_bytes()
    except FileNotFoundError:
        raise UpdateRefused("the chapter was deleted while it was being verified") from None
    except OSError as error:
        raise UpdateRefused(f"cannot read the chapter again: {error.strerror}") from None
    # An author may have saved the file while it was verified: their edit wins.
    if on_disk != chapter.text.encode("utf-8"):
        raise UpdateRefused("the file changed while it was being verified; run again")
    _write_atomically(path, new_text.encode("utf-8"))


def _write_atomically(path: Path, data: bytes) -> None:
    """`data` in a temporary file in `path`'s folder, flushed to disk, then renamed over
    `path` (a rename within one file system replaces the file whole or not at all)."""
    target = Path(os.path.realpath(path))  # a chapter behind a link stays a link
    try:
        mode = target.stat().st_mode & 0o7777
        descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    except OSError as error:
        raise UpdateRefused(f"cannot write beside the chapter: {error.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException as error:
        # A full disk, or Ctrl-C mid-write: the chapter is untouched, and no
        # half-written copy stays beside it.
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise UpdateRefused(
                f"cannot write the chapter ({error.strerror}); it was left as it was"
            ) from None
        raise


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
    for fence, output in replacements.items():
        if fence.kind == "output" and any(WILDCARD in line for line in normalise(output)):
            raise UpdateRefused(
                f"line {fence.line}: the new output holds {WILDCARD!r}, which the `output` "
                "block would read as a wildcard; update it by hand"
            )
    new_text = rewrite_fences(chapter.text, replacements)
    if new_text != chapter.text:
        _replace(chapter, new_text)
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
