"""`--textbook` with its cache: only what changed runs again; an entry is never trusted blindly.

Each test verifies a three-chapter book with the verifier of a private copy of
this checkout (its real script, in a subprocess), so that touching "the
runtime" or "the lock file" touches the copy's, never the repository's.

A cache's keys hold absolute paths (the copy's, the book's), so a primed cache
hits only where it was made. The module primes one, once, in a folder of its
own, and keeps a pristine snapshot of the copy, the book and the cache; before
each test the snapshot is put back at the very same paths, so every test starts
from a cache that a real run filled, and none sees what another changed. (The
book stays on disk: the verifier's sandbox mounts a /dev of its own, so a book
in /dev/shm would be out of its sight.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from exercise_books import in_memory
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.layout import REPO_ROOT
from bookproof.verify.cache import VerdictCache, shared_inputs_digest
from bookproof.verify.chapter import read_chapter
from bookproof.verify.judge import ChapterJob
from bookproof.verify.manifest import load_manifest

GOOD = REPO_ROOT / "tests" / "bookproof" / "verify_fixtures" / "book_good"
CHAPTERS = (1, 2, 3)


def copy_checkout(target: Path) -> None:
    """This checkout's files as they are now (tracked or new, never ignored ones)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        wanted = name.startswith(("src/", "scripts/")) or name in ("uv.lock", "pyproject.toml")
        if wanted and source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def make_book(root: Path) -> Path:
    """Three drafted chapters, each the fixture's chapter under its own name; the manifest."""
    shutil.copytree(GOOD, root)
    textbook = root / "book" / "textbook"
    text = (textbook / "ch01_counting_tubs.md").read_text(encoding="utf-8")
    entries = ['title = "Cache fixture"\n']
    for number in CHAPTERS:
        name = f"ch{number:02d}_counting_tubs"
        checkpoint = f"checkpoints/fixture_{name}_checkpoint.py"
        learner = f"learner/fixture_{name}_learner.py"
        if number != 1:
            (textbook / f"{name}.md").write_text(
                text.replace("ch01_counting_tubs", name), encoding="utf-8"
            )
            for kind in (checkpoint, learner):
                shutil.copy(textbook / kind.replace(name, "ch01_counting_tubs"), textbook / kind)
            for folder in ("exercises", "solutions"):
                (root / folder / f"book{number:02d}").mkdir(parents=True, exist_ok=True)
        entries.append(
            f'[[chapters]]\nnumber = {number}\ntitle = "Counting tubs"\nstatus = "drafted"\n'
            f'text = "{name}.md"\ncheckpoint = "{checkpoint}"\nlearner = "{learner}"\n'
            f'exercises = "exercises/book{number:02d}"\nsolutions = "solutions/book{number:02d}"\n'
        )
    manifest = textbook / "book.toml"
    manifest.write_text("\n".join(entries), encoding="utf-8")
    return manifest


@dataclass(frozen=True)
class Primed:
    """A copy of the checkout, the book and a cache filled by verifying it, at fixed paths."""

    folder: Path  # where the tests work: `checkout`, `book_root` and `cache` under it
    pristine: Path  # the same three, as the priming run left them

    @property
    def checkout(self) -> Path:
        return self.folder / "checkout"

    @property
    def book(self) -> Path:
        return self.folder / "book_root" / "book" / "textbook" / "book.toml"

    @property
    def cache(self) -> Path:
        return self.folder / "cache"

    def restore(self) -> None:
        """Everything back as the priming run left it, at the same paths (the keys hold them)."""
        shutil.rmtree(self.folder)
        shutil.copytree(self.pristine, self.folder, symlinks=True)


@pytest.fixture(scope="module")
def primed(tmp_path_factory: pytest.TempPathFactory) -> Primed:
    base = tmp_path_factory.mktemp("primed")
    made = Primed(folder=base / "work", pristine=base / "pristine")
    copy_checkout(made.checkout)
    assert make_book(made.folder / "book_root") == made.book
    _, first = run(made.checkout, made.book, made.cache)
    # An empty cache holds nothing: every chapter is verified, and stored.
    assert ran(first) == [1, 2, 3]
    assert len(list(made.cache.glob("*-ch0?.json"))) == 3
    shutil.copytree(made.folder, made.pristine, symlinks=True)
    return made


@pytest.fixture
def workspace(primed: Primed) -> Primed:
    primed.restore()
    return primed


@pytest.fixture
def checkout(workspace: Primed) -> Path:
    return workspace.checkout


@pytest.fixture
def book(workspace: Primed) -> Path:
    return workspace.book


@pytest.fixture
def cache(workspace: Primed) -> Path:
    """The cache the priming run filled: every chapter of the book held, as it stands."""
    return workspace.cache


def run(checkout: Path, manifest: Path, cache: Path, *more: str) -> tuple[str, dict[str, Any]]:
    """The verifier's output and JSON report, after it exited 0."""
    report = cache.parent / "report.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(checkout / "scripts" / "verify_book_assets_v2.py"),
            "--textbook",
            "--manifest",
            str(manifest),
            "--cache-dir",
            str(cache),
            "--json",
            str(report),
            *more,
        ],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout, json.loads(report.read_text(encoding="utf-8"))


def ran(report: dict[str, Any]) -> list[int]:
    """The chapters verified in this run (the others came from the cache)."""
    return [entry["number"] for entry in report["chapters"] if entry["cache"] == "run"]


@pytest.mark.slow  # several verifier runs each
def test_only_an_edited_chapter_runs_again_and_a_hit_is_reported_as_cached(
    checkout: Path, book: Path, cache: Path
) -> None:
    # The first run, on an empty cache, verified every chapter: see `primed`.
    output, second = run(checkout, book, cache)
    assert ran(second) == []
    assert second["summary"]["held"] == 0 and second["summary"]["cached"] == 3
    assert second["summary"]["listings_passed"] == 0
    assert all(entry["cached_from"] for entry in second["chapters"])
    summary = output.splitlines()[-1]
    assert summary.startswith("Summary: 0 chapter(s) verified, 0 hold, 0 failed, 3 cached")
    rows = [line for line in output.splitlines() if "Counting tubs" in line]
    assert len(rows) == 3 and all(row.endswith("cached") for row in rows)

    with (book.parent / "ch02_counting_tubs.md").open("a", encoding="utf-8") as text:
        text.write("\nAn edit to chapter 2.\n")
    output, third = run(checkout, book, cache)
    assert ran(third) == [2]
    assert third["summary"]["held"] == 1 and third["summary"]["cached"] == 2
    assert output.splitlines()[-1].startswith("Summary: 1 chapter(s) verified, 1 hold")


@pytest.mark.slow  # several verifier runs each
@pytest.mark.parametrize(
    "touched", ["src/sovereign_agent/__init__.py", "uv.lock", "src/bookproof/verify/judge.py"]
)
def test_a_change_to_the_runtime_the_lock_or_the_verifier_runs_every_chapter(
    checkout: Path, book: Path, cache: Path, touched: str
) -> None:
    with (checkout / touched).open("a", encoding="utf-8") as source:
        source.write("\n# touched\n")
    _, report = run(checkout, book, cache)
    assert ran(report) == [1, 2, 3]


@pytest.mark.slow  # several verifier runs each
def test_a_change_to_a_checkpoint_or_the_time_limit_runs_every_chapter(
    checkout: Path, book: Path, cache: Path
) -> None:
    _, report = run(checkout, book, cache, "--timeout", "31")
    assert ran(report) == [1, 2, 3]
    checkpoint = book.parent / "checkpoints" / "fixture_ch03_counting_tubs_checkpoint.py"
    with checkpoint.open("a", encoding="utf-8") as source:
        source.write("\n# touched\n")
    _, report = run(checkout, book, cache)
    assert ran(report) == [1, 2, 3]


@pytest.mark.slow  # several verifier runs each
def test_no_cache_runs_everything_and_leaves_the_cache_alone(
    checkout: Path, book: Path, cache: Path
) -> None:
    absent = cache.parent / "no-cache-yet"
    output, report = run(checkout, book, absent, "--no-cache")
    assert ran(report) == [1, 2, 3]
    assert "cache off" in output.splitlines()[0]
    assert not absent.exists()
    # A filled cache is not read either: every chapter runs again.
    _, report = run(checkout, book, cache, "--no-cache")
    assert ran(report) == [1, 2, 3]


def entry_file(cache: Path, number: int) -> Path:
    (found,) = cache.glob(f"*-ch{number:02d}.json")
    return found


@pytest.mark.slow  # several verifier runs each
def test_a_corrupted_or_forged_entry_is_ignored_with_a_warning_and_replaced(
    checkout: Path, book: Path, cache: Path, tmp_path: Path
) -> None:
    # Chapter 1: not JSON. Chapter 2: a failure dressed as a pass. Chapter 3: a link.
    entry_file(cache, 1).write_bytes(b"\x00{not json")
    forged = json.loads(entry_file(cache, 2).read_text(encoding="utf-8"))
    forged["verdict"]["blocks"][0]["status"] = "failed"
    entry_file(cache, 2).write_text(json.dumps(forged), encoding="utf-8")
    secret = tmp_path / "secret.json"
    secret.write_text("secret-token-cache-1234", encoding="utf-8")
    entry_file(cache, 3).unlink()
    (cache / entry_file(cache, 1).name.replace("ch01", "ch03")).symlink_to(secret)
    output, report = run(checkout, book, cache)
    assert ran(report) == [1, 2, 3]
    warnings = [line for line in output.splitlines() if line.startswith("warning: the cache")]
    assert len(warnings) == 3, output
    assert "ignored, the chapter was verified afresh" in warnings[0]
    assert "secret-token" not in output
    assert secret.read_text(encoding="utf-8") == "secret-token-cache-1234"
    assert all(entry["warnings"] for entry in report["chapters"])
    # Each was replaced by the verdict of this run: the next run finds them.
    _, report = run(checkout, book, cache)
    assert ran(report) == []


# --- the lookup itself, over anything a cache file may hold ----------------------------------


@pytest.fixture(scope="module")
def genuine(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[VerdictCache, ChapterJob, bytes]]:
    """A cache holding chapter 1's verdict from a real run, its job, and the entry's bytes.

    The cache is in memory where the machine has one: the tests below rewrite
    its entry hundreds of times. (The book stays on disk, in the sandbox's sight.)
    """
    root = tmp_path_factory.mktemp("genuine")
    with in_memory(root) as memory:
        yield _genuine(root, memory / "cache")


def _genuine(root: Path, cache_dir: Path) -> tuple[VerdictCache, ChapterJob, bytes]:
    manifest_path = make_book(root / "book_root")
    report = root / "report.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "scripts" / "verify_book_assets_v2.py"),
            "--textbook",
            "--manifest",
            str(manifest_path),
            "--cache-dir",
            str(cache_dir),
            "--json",
            str(report),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    manifest = load_manifest(manifest_path)
    isolation = json.loads(report.read_text(encoding="utf-8"))["isolation"]["mode"]
    shared = shared_inputs_digest(manifest, timeout=30.0, isolation=isolation)
    cache = VerdictCache(cache_dir, shared, manifest)
    entry = manifest.chapters[0]
    assert entry.text is not None
    job = ChapterJob(chapter=read_chapter(entry.text), entry=entry)
    found = cache.lookup(job)
    assert found.verdict is not None and found.verdict.cached, found.warning
    return cache, job, cache.path_for(job).read_bytes()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)


def mutate(document: Any, path: list[int], value: Any) -> Any:
    """`document` with the node `path` leads to (choosing among children by index) replaced."""
    if not path or not isinstance(document, dict | list) or not document:
        return value
    children = list(document.items()) if isinstance(document, dict) else list(enumerate(document))
    key, child = children[path[0] % len(children)]
    copied = dict(document) if isinstance(document, dict) else list(document)
    copied[key] = mutate(child, path[1:], value)
    return copied


@settings(
    max_examples=examples(200),
    deadline=None,
)
@given(data=st.binary(max_size=2_000))
def test_any_bytes_in_an_entry_are_never_a_pass(
    genuine: tuple[VerdictCache, ChapterJob, bytes], data: bytes
) -> None:
    cache, job, original = genuine
    path = cache.path_for(job)
    try:
        path.write_bytes(data)
        found = cache.lookup(job)
        assert found.verdict is None or data == original
        if found.verdict is None and data:
            assert found.warning is not None and "ignored" in found.warning
    finally:
        path.write_bytes(original)


@settings(
    max_examples=examples(300),
    deadline=None,
)
@given(path=st.lists(st.integers(min_value=0, max_value=50), max_size=5), value=JSON)
def test_a_genuine_entry_changed_anywhere_is_a_pass_only_if_it_still_says_exactly_that(
    genuine: tuple[VerdictCache, ChapterJob, bytes], path: list[int], value: Any
) -> None:
    cache, job, original = genuine
    document = json.loads(original)
    changed = mutate(document, path, value)
    file = cache.path_for(job)
    try:
        file.write_text(json.dumps(changed), encoding="utf-8")
        found = cache.lookup(job)
    finally:
        file.write_bytes(original)
    if found.verdict is None:
        return
    # Trusted only as what a held verdict of this very chapter is.
    assert changed["key"] == document["key"] and changed["format"] == 1
    verdict = found.verdict
    assert verdict.ok and verdict.cached and verdict.checkpoint == "ok"
    assert [block.line for block in verdict.blocks] == [
        listing.fence.line for listing in job.chapter.listings
    ]
    assert all(block.status == "passed" for block in verdict.blocks)


def test_an_oversized_entry_is_not_read(genuine: tuple[VerdictCache, ChapterJob, bytes]) -> None:
    cache, job, original = genuine
    path = cache.path_for(job)
    try:
        with path.open("wb") as stream:
            stream.write(original)
            stream.truncate(8 * 1024 * 1024)
        found = cache.lookup(job)
    finally:
        path.write_bytes(original)
    assert found.verdict is None and found.warning is not None and "larger than" in found.warning


def test_a_fifo_in_place_of_an_entry_does_not_block(
    genuine: tuple[VerdictCache, ChapterJob, bytes],
) -> None:
    cache, job, original = genuine
    path = cache.path_for(job)
    path.unlink()
    os.mkfifo(path)
    try:
        found = cache.lookup(job)
    finally:
        path.unlink()
        path.write_bytes(original)
    assert found.verdict is None and found.warning is not None and "not a regular" in found.warning
