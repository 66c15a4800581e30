"""The verifier's cache: a chapter that held is not run again while nothing it reads changed.

`--textbook` looks each drafted chapter up here before running anything. An
entry is keyed by a SHA-256 digest of everything the chapter's verdict can
depend on:

- the chapter's own text, and its listings as composed (a `changes=` listing
  built on an earlier chapter's definition changes when that definition does),
  its manifest entry, and whether its exercise and solution folders exist;
- every other file of the book's folder (checkpoints, learner files, figures
  and their scripts, data, servers, skills: listings and checkpoints run or
  read each other's, so any of them counts for every chapter), the chapter
  texts of other chapters excepted;
- the runtime's and the tooling's source (`src/`, the verifier's own code
  included) and `scripts/`, `uv.lock` and `pyproject.toml`;
- the interpreter (its version and the binary itself), the time limit and
  the isolation the run uses.

Only a verdict that held is stored, and a hit is reported as taken from the
cache, never as a fresh pass. An entry is read with the suspicion any file on
disk deserves: a link, an oversized file, malformed JSON, a field of the
wrong type, a failure, or listings that are not the chapter's own make it a
miss with a warning, and the chapter is verified afresh.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import hashlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bookproof.verify.environment import (
    DEFAULT_CACHE_DIR,
    REPO_ROOT,
    display_path,
    python_executable,
)
from bookproof.verify.judge import ChapterJob
from bookproof.verify.manifest import Manifest
from bookproof.verify.verdict import BlockVerdict, ChapterVerdict, Coverage

__all__ = [
    "CACHE_FORMAT",
    "DEFAULT_CACHE_DIR",
    "CacheLookup",
    "VerdictCache",
    "shared_inputs_digest",
]

# Bumped whenever what a key covers or an entry holds changes: old entries then miss.
CACHE_FORMAT: Literal[1] = 1
# An honest entry is a few KiB per hundred listings; anything far larger is not ours.
MAX_ENTRY_BYTES = 4 * 1024 * 1024
# Folders of generated files that no verdict depends on.
_SKIPPED_FOLDERS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})


# --- what a key covers -------------------------------------------------------------------


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as error:
        # Unreadable now: the key says so, and changes when it becomes readable.
        return f"unreadable: {error.strerror or error}"


def _tree_digest(root: Path, leave_out: frozenset[Path]) -> str:
    """The digest of every file under `root` (links as links), in a fixed order."""
    hasher = hashlib.sha256()
    if root.is_file():
        hasher.update(f"file {root.name}\0{_file_digest(root)}\0".encode())
    elif not root.is_dir():
        hasher.update(f"absent {root.name}\0".encode())
    for folder, folders, files in os.walk(root):  # never follows a link to a folder
        folders[:] = sorted(name for name in folders if name not in _SKIPPED_FOLDERS)
        for name in sorted(files):
            path = Path(folder, name)
            if name.endswith(".pyc") or path.resolve() in leave_out:
                continue
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                hasher.update(f"link {relative}\0{os.readlink(path)}\0".encode())
            hasher.update(f"file {relative}\0{_file_digest(path)}\0".encode())
    return hasher.hexdigest()


def shared_inputs_digest(
    manifest: Manifest, *, timeout: float, isolation: str, repo: Path = REPO_ROOT
) -> str:
    """The digest of every input all chapters share, computed once per run."""
    hasher = hashlib.sha256()
    interpreter = Path(python_executable()).resolve()
    try:
        binary = interpreter.stat()
        identity = f"{binary.st_size}:{binary.st_mtime_ns}"
    except OSError:
        identity = "missing"
    hasher.update(
        json.dumps(
            {
                "format": CACHE_FORMAT,
                "python": [sys.version, str(interpreter), identity],
                "timeout": repr(timeout),
                "isolation": isolation,
            },
            sort_keys=True,
        ).encode()
    )
    texts = frozenset(
        chapter.text.resolve() for chapter in manifest.chapters if chapter.text is not None
    )
    book = manifest.path.resolve().parent
    for root, leave_out in (
        (book, texts),
        (repo / "src", frozenset()),
        (repo / "scripts", frozenset()),
        (repo / "uv.lock", frozenset()),
        (repo / "pyproject.toml", frozenset()),
    ):
        hasher.update(f"root {root}\0{_tree_digest(root, leave_out)}\0".encode())
    return hasher.hexdigest()


def chapter_key(job: ChapterJob, shared: str) -> str:
    """The digest of everything chapter `job`'s verdict depends on."""
    chapter, entry = job.chapter, job.entry
    described: dict[str, object] = {
        "shared": shared,
        "text": hashlib.sha256(chapter.text.encode("utf-8", "surrogatepass")).hexdigest(),
        "composed": [
            ast.dump(listing.composed) if listing.composed is not None else None
            for listing in chapter.listings
        ],
        "compositions": [
            [line, list(composition.source)]
            for line, composition in sorted(chapter.compositions.items())
        ],
    }
    if entry is not None:
        described["entry"] = {
            "number": entry.number,
            "title": entry.title,
            "text": str(entry.text),
            "checkpoint": str(entry.checkpoint),
            "learner": str(entry.learner),
            "exercises": [str(entry.exercises), bool(entry.exercises and entry.exercises.is_dir())],
            "solutions": [str(entry.solutions), bool(entry.solutions and entry.solutions.is_dir())],
        }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


# --- what an entry holds -------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Block(_Strict):
    line: int = Field(ge=1)
    output_line: int | None = Field(default=None, ge=1)
    mode: Literal["exact", "wildcard", "no-output"]
    status: Literal["passed"]  # an entry is a chapter that held: every listing passed


class _Coverage(_Strict):
    exact: int = Field(ge=0)
    wildcard: int = Field(ge=0)
    no_output: int = Field(ge=0)
    skipped: int = Field(ge=0)
    checkpoint_checked: int = Field(ge=0)
    checkpoint_not_checked: int = Field(ge=0)


_Text = Field(max_length=100_000)


class _Verdict(_Strict):
    number: int
    title: str = _Text
    blocks: tuple[_Block, ...]
    checkpoint: Literal["ok"]
    learner: Literal["ok"]
    exercises: Literal["ok"]
    coverage: _Coverage
    seconds: float = Field(ge=0, allow_inf_nan=False)
    warnings: tuple[str, ...] = Field(max_length=1_000)
    checkpoint_stdout: str | None = Field(default=None, max_length=1_000_000)
    isolation: Literal["bwrap", "none"]


class _Entry(_Strict):
    format: Literal[1]
    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    verified_at: str = Field(max_length=40)
    verdict: _Verdict


@dataclass(frozen=True)
class CacheLookup:
    """A chapter's key, the verdict found for it (None: verify it), and any warning."""

    key: str
    verdict: ChapterVerdict | None = None
    warning: str | None = None


def _read_entry(path: Path) -> bytes | None:
    """The entry's bytes; None when there is none. Raises ValueError for what is not one."""
    try:
        # O_NOFOLLOW: a link planted in the cache is refused, never followed.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ValueError(f"cannot be opened ({error.strerror or error})") from None
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("is not a regular file")
        if info.st_size > MAX_ENTRY_BYTES:
            raise ValueError(f"is larger than {MAX_ENTRY_BYTES} bytes")
        data = stream.read(MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:
        raise ValueError(f"is larger than {MAX_ENTRY_BYTES} bytes")
    return data


def _problem(error: ValidationError) -> str:
    first = error.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "the top level"
    # The message names a type or a bound, never the file's content.
    return f"not an entry this verifier writes ({where}: {first['msg']})"


class VerdictCache:
    """The cache folder of one run: looks chapters up, and stores those that held."""

    def __init__(self, folder: Path, shared: str, manifest: Manifest) -> None:
        self.folder = folder
        self.shared = shared
        # One file per chapter of one manifest: a newer verdict replaces the old.
        self.prefix = hashlib.sha256(str(manifest.path.resolve()).encode()).hexdigest()[:16]

    def path_for(self, job: ChapterJob) -> Path:
        number = job.entry.number if job.entry is not None else 0
        return self.folder / f"{self.prefix}-ch{number:02d}.json"

    def lookup(self, job: ChapterJob) -> CacheLookup:
        key = chapter_key(job, self.shared)
        path = self.path_for(job)
        label = f"chapter {job.entry.number}" if job.entry is not None else job.chapter.path.name
        try:
            data = _read_entry(path)
            if data is None:
                return CacheLookup(key)
            entry = _Entry.model_validate_json(data)
        except ValueError as error:
            reason = _problem(error) if isinstance(error, ValidationError) else str(error)
            return CacheLookup(key, warning=self._ignored(label, path, reason))
        except RecursionError:
            return CacheLookup(key, warning=self._ignored(label, path, "is nested too deeply"))
        if entry.key != key:
            return CacheLookup(key)  # an earlier verdict: something it depends on changed
        mismatch = self._mismatch(job, entry.verdict)
        if mismatch is not None:
            return CacheLookup(key, warning=self._ignored(label, path, mismatch))
        return CacheLookup(key, verdict=self._verdict(job, entry))

    def _ignored(self, label: str, path: Path, reason: str) -> str:
        return (
            f"the cache entry for {label} ({display_path(path)}) {reason}; ignored, "
            "the chapter was verified afresh"
        )

    @staticmethod
    def _mismatch(job: ChapterJob, verdict: _Verdict) -> str | None:
        """Why a well-formed entry with the right key still cannot be this chapter's."""
        if job.entry is None or verdict.number != job.entry.number:
            return "names another chapter"
        if verdict.title != job.entry.title:
            return "names another title"
        lines = [listing.fence.line for listing in job.chapter.listings]
        if [block.line for block in verdict.blocks] != lines:
            return "does not hold the chapter's listings"
        return None

    @staticmethod
    def _verdict(job: ChapterJob, entry: _Entry) -> ChapterVerdict:
        held = entry.verdict
        return ChapterVerdict(
            path=job.chapter.path,
            display=display_path(job.chapter.path),
            number=held.number,
            title=held.title,
            blocks=tuple(
                BlockVerdict(block.line, block.output_line, block.mode, block.status)
                for block in held.blocks
            ),
            checkpoint=held.checkpoint,
            learner=held.learner,
            failures=(),
            coverage=Coverage(**held.coverage.model_dump()),
            seconds=held.seconds,
            warnings=held.warnings,
            exercises=held.exercises,
            checkpoint_stdout=held.checkpoint_stdout,
            isolation=held.isolation,
            cached_from=entry.verified_at,
        )

    def store(self, job: ChapterJob, key: str, verdict: ChapterVerdict) -> str | None:
        """Keep a verdict that held; returns a warning when the entry could not be written."""
        held = (verdict.checkpoint, verdict.learner, verdict.exercises) == ("ok", "ok", "ok")
        if not (verdict.ok and held) or verdict.cached_from is not None or job.entry is None:
            return None
        entry = _Entry(
            format=CACHE_FORMAT,
            key=key,
            verified_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            verdict=_Verdict(
                number=job.entry.number,
                title=job.entry.title,
                blocks=tuple(
                    _Block(
                        line=block.line,
                        output_line=block.output_line,
                        mode=block.mode,
                        status="passed",
                    )
                    for block in verdict.blocks
                ),
                checkpoint="ok",
                learner="ok",
                exercises="ok",
                coverage=_Coverage(**dataclasses.asdict(verdict.coverage)),
                seconds=verdict.seconds,
                warnings=verdict.warnings,
                checkpoint_stdout=verdict.checkpoint_stdout,
                isolation="bwrap" if verdict.isolation == "bwrap" else "none",
            ),
        )
        try:
            self._write(self.path_for(job), entry.model_dump_json())
        except OSError as error:
            reason = error.strerror or str(error)
            return f"the verdict of chapter {job.entry.number} was not cached: {reason}"
        return None

    def _write(self, path: Path, text: str) -> None:
        # Written whole, then renamed: a reader never sees half an entry, and two
        # runs storing at once leave one complete entry.
        self.folder.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.folder, prefix=".entry-", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def cached_count(verdicts: Iterable[ChapterVerdict]) -> int:
    return sum(1 for verdict in verdicts if verdict.cached_from is not None)
