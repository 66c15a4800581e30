"""The typed records a verification produces, shared by the reports and --update."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

__all__ = [
    "LISTING_FAILURE_KINDS",
    "BlockStatus",
    "BlockVerdict",
    "ChapterVerdict",
    "Coverage",
    "Failure",
    "FailureKind",
    "ListingFailureKind",
    "Mode",
]

Mode = Literal["exact", "wildcard", "no-output"]
BlockStatus = Literal["passed", "failed", "not-run"]

# Failures of a chapter's own listings: after the first, later ones may cascade from it.
ListingFailureKind = Literal[
    "output-mismatch",
    "unexpected-output",
    "exception",
    "wrong-exception",
    "no-exception",
    "syntax-error",
    "too-much-output",
    "timeout",
    "crash",
    "not-run",
    "process-left-running",
]
LISTING_FAILURE_KINDS: frozenset[str] = frozenset(get_args(ListingFailureKind))

FailureKind = (
    ListingFailureKind
    | Literal[
        "checkpoint",
        "checkpoint-output",
        "learner",
        "drift",
        "checkpoint-drift",
        "exercises",
        "figure",
    ]
)


@dataclass(frozen=True)
class Failure:
    """One thing that does not hold, located at a file and line a reader can open."""

    file: str
    line: int
    kind: FailureKind
    message: str
    detail: str = ""  # a unified diff or the chapter's traceback lines
    cascade_of: str | None = None  # "file:line" of the chapter's first failure, if earlier


@dataclass(frozen=True)
class BlockVerdict:
    """What became of one executed listing."""

    line: int
    output_line: int | None
    mode: Mode
    status: BlockStatus
    actual: str | None = None  # printed output, kept for --update
    updatable: bool = False  # ran as intended, so its output may replace the block's


@dataclass(frozen=True)
class Coverage:
    """How each listing of a chapter was checked."""

    exact: int = 0
    wildcard: int = 0
    no_output: int = 0
    skipped: int = 0
    checkpoint_checked: int = 0
    checkpoint_not_checked: int = 0

    def line(self) -> str:
        return (
            f"{self.exact} compared exactly, {self.wildcard} with wildcards, "
            f"{self.no_output} run without output, {self.skipped} skipped; "
            f"checkpoint-output: {self.checkpoint_checked} checked, "
            f"{self.checkpoint_not_checked} not checked"
        )


@dataclass(frozen=True)
class ChapterVerdict:
    """Everything verified about one chapter file."""

    path: Path
    display: str
    number: int | None
    title: str | None
    blocks: tuple[BlockVerdict, ...]
    checkpoint: str  # "ok", "failed", "not checked"
    learner: str  # "ok", "failed", "none"
    failures: tuple[Failure, ...]
    coverage: Coverage
    seconds: float
    warnings: tuple[str, ...] = field(default=())
    exercises: str = "-"  # "ok" or "missing" for a manifest chapter's exercise folders
    checkpoint_stdout: str | None = None
    updated: tuple[str, ...] = field(default=())  # "file:line" of blocks --update rewrote
    # How its code ran: "bwrap" (a sandbox per run, see verify.isolation) or "none".
    isolation: str = "none"
    # When the run that verified it ended (UTC, ISO 8601), for a verdict taken from
    # the cache (`bookproof.verify.cache`); None for a chapter verified in this run.
    cached_from: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def cached(self) -> bool:
        return self.cached_from is not None

    @property
    def passed(self) -> int:
        return sum(1 for block in self.blocks if block.status == "passed")

    @property
    def label(self) -> str:
        return f"ch{self.number:02d}" if self.number is not None else self.display
