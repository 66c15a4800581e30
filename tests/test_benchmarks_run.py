"""Every benchmark script still runs and prints its figures.

The figures themselves are never asserted here: a timed test on a shared
machine proves nothing. What can rot silently is the script, when the code it
measures changes under it, so each one is run in a real subprocess with the
smallest workload its options allow. A script that misses its goal exits 1,
which is its verdict to give, not a failure of this test; anything else (a
traceback, a usage error) is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from system_components import require_executable

from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT

SMALLEST: dict[str, tuple[list[str], str]] = {
    "bench_dispatch.py": (["--calls", "20", "--repeat", "1"], "valid draft"),
    "bench_schema.py": (["--calls", "1", "--repeat", "1"], "one step's schemas()"),
    "bench_trace.py": (["--runs", "1", "--repeat", "2"], "recording alone:"),
    "bench_store.py": (["--calls", "20", "--repeat", "1", "--drafts", "20"], "x dict"),
    "bench_verify.py": (["--repeat", "1", "--sweep"], "linear cost"),
    "bench_grade.py": (["--book", "1", "--copies", "2", "--rounds", "1"], "sandbox cost"),
    "bench_mcp.py": (["--calls", "5", "--repeat", "1"], "ours / bare SDK"),
    "bench_purchase.py": (["--purchases", "3", "--repeat", "1"], "ours / bare:"),
    "bench_limits.py": (["--calls", "5", "--repeat", "1"], "side by side"),
    "bench_run_python.py": (["--repeat", "1"], "boundary cost"),
    "bench_durable.py": (["--runs", "1", "--repeat", "1"], "cost of durability:"),
}


@pytest.mark.parametrize("script", sorted(SMALLEST))
def test_the_benchmark_runs_and_prints_its_figures(script: str, tmp_path: Path) -> None:
    options, figure = SMALLEST[script]
    if script in ("bench_grade.py", "bench_run_python.py"):
        require_executable("bwrap", install="sudo apt-get install bubblewrap")
    if script == "bench_store.py":
        options = [*options, "--dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), *options],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert figure in done.stdout, done.stdout


def test_every_benchmark_script_is_run_here() -> None:
    assert {path.name for path in (ROOT / "scripts").glob("bench_*.py")} == set(SMALLEST)


def test_the_incremental_verification_benchmark_runs_and_prints_its_figures(
    tmp_path: Path,
) -> None:
    """`bench_verify.py --incremental` on a copy of the one-chapter fixture book.

    The book itself takes minutes; the benchmark edits the chapter it times (and
    restores it), so it gets a private copy, never the repository's fixture.
    """
    book = tmp_path / "book_good"
    shutil.copytree(ROOT / "tests" / "bookproof" / "verify_fixtures" / "book_good", book)
    chapter = book / "book" / "textbook" / "ch01_counting_tubs.md"
    before = chapter.read_bytes()
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_verify.py"),
            "--incremental",
            "--repeat",
            "1",
            "--manifest",
            str(book / "book" / "textbook" / "book.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "ratio edited / full" in done.stdout, done.stdout
    # The one chapter, edited, is the one that ran; its figures count.
    assert "the cache re-ran the wrong chapters" not in done.stdout, done.stdout
    assert "verifier exit statuses [0]" in done.stdout, done.stdout
    assert chapter.read_bytes() == before  # the edit was undone
