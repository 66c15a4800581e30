"""Settings every test shares: Hypothesis's strength, slow tests, a compiled environment.

`uv run pytest -m "not slow" -n 2 --dist loadfile` is the quick tier a
developer runs after each change; without `-m`, everything, as CI does.
"""

from __future__ import annotations

import compileall
import os
import signal
import sys
from pathlib import Path

import pytest
from grading import SharedGrades
from hypothesis import HealthCheck, settings
from real_book import RealBookRun, real_book_run
from strength import FULL, examples

from bookproof.grade.integrity import relied_on

# Tests that name no example count get Hypothesis's default at full strength.
# `too_slow` fails a test when generating its inputs takes long in wall time:
# with two workers (`-n 2`) on a shared machine that measures the machine, not
# the test, and it failed tests whose inputs are fine. It is a warning about
# the test's speed, not one of its assertions: every example still runs, and
# every assertion still holds or fails the test. Hypothesis's per-example
# deadline (200 ms) is the same kind of measure: a timed test of the machine's
# load, which failed parsers that take 6 ms when the machine was idle. No claim
# of this project rests on a test's wall time (benchmarks make those), so no
# profile keeps it; a test that must end in time bounds itself.
settings.register_profile("full", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "quick",
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("full" if FULL else "quick")

TESTS = Path(__file__).resolve().parent

# Whole files whose every test grades submissions in sandboxes, builds or
# browses the website, runs notebooks, or verifies the real book end to end:
# each costs seconds to minutes, so they are the full suite's, not the quick
# tier's. Individual slow tests elsewhere carry @pytest.mark.slow themselves.
SLOW_FILES = (
    "book/test_ch*_exercises.py",
    "book/test_exercise_grading.py",
    "book/test_new_chapter.py",
    "bookproof/test_grade_cli.py",
    "bookproof/test_grade_gradescope*.py",
    "bookproof/test_grade_hostile.py",
    "bookproof/test_grade_isolation.py",
    "bookproof/test_grade_zygote.py",
    "bookproof/test_notebooks_execute.py",
    "site/test_site_browser*.py",
    "site/test_site_build.py",
    "sovereign_agent/test_dbos_recovery.py",
    "sovereign_agent/test_worker_recovery.py",
    "sovereign_agent/test_purchasing_crashes.py",
    "sovereign_agent/test_purchasing_faults.py",
    "test_benchmarks_run.py",
    "test_packaging.py",
)


def _slow_file(path: Path) -> bool:
    relative = path.relative_to(TESTS) if path.is_relative_to(TESTS) else None
    return relative is not None and any(relative.match(pattern) for pattern in SLOW_FILES)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The quick tier does not even import the slow files.

    `-m "not slow"` would deselect every test of theirs after collection; importing
    them first (Playwright, matplotlib, the grader's books) cost each xdist worker
    seconds before its first test. Any other expression collects them as before.
    """
    if config.option.markexpr.split() == ["not", "slow"] and _slow_file(collection_path):
        return True
    return None  # pytest's own rules decide


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _slow_file(item.path):
            item.add_marker(pytest.mark.slow)


def _interruptible() -> None:
    """Let Ctrl-C reach the processes the tests start, however pytest was started.

    A shell without job control starts a background command (`pytest &` in a
    script) with SIGINT ignored, and an ignored signal stays ignored across
    fork and exec: every worker, verifier and server a test starts would then
    shrug off the SIGINT that tests of a clean stop send it, and those tests
    would wait out their timeouts. The tests restore Python's own handler for
    themselves, so their children start with the default, as from a terminal.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    """Make the processes tests start interruptible; byte-compile what the grader watches.

    The grader refuses a batch during which the environment it relies on
    changed (`bookproof.grade.integrity`). Under pytest-xdist another worker
    importing a module for the first time writes its `.pyc` into that very
    environment, which is such a change. Compiled once here, by the
    controller before its workers start, nothing is left to write.
    """
    _interruptible()
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller has done it
    if not getattr(config.option, "numprocesses", None):
        return  # one process runs one test at a time: nothing writes during a batch
    roots = [root for root in relied_on() if root.is_dir()]
    # Run before any worker starts, so every second here is a second of the
    # run's wall time. A pool of processes (`workers=0`) pays off only when
    # there is compiling to do (a fresh environment); when every module already
    # has its `.pyc`, checking them in this process takes a fifth of the time.
    # compileall still checks each `.pyc` against its source either way.
    workers = 0 if any(_uncompiled(root) for root in roots) else 1
    for root in roots:
        compileall.compile_dir(root, quiet=2, workers=workers)


def _uncompiled(root: Path) -> bool:
    """Whether some module under `root` has no `.pyc` of this interpreter at all."""
    tag = sys.implementation.cache_tag
    for folder, subfolders, files in os.walk(root):
        cached = (
            set(os.listdir(Path(folder) / "__pycache__")) if "__pycache__" in subfolders else set()
        )
        if any(name.endswith(".py") and f"{name[:-3]}.{tag}.pyc" not in cached for name in files):
            return True
    return False


@pytest.fixture(scope="session")
def session_folder(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A folder of this test run alone that every xdist worker sees.

    An xdist worker's base temporary folder is `pytest-N/popen-gwK`, made
    inside the run's own, so its parent is the one folder all workers share;
    without workers, the run's base is it. Nothing from an earlier run is
    ever in it, so what tests share through it is never stale.
    """
    base = tmp_path_factory.getbasetemp()
    return base.parent if hasattr(request.config, "workerinput") else base


@pytest.fixture(scope="session")
def shared_grades(session_folder: Path) -> SharedGrades:
    """Graded rows every test of this session shares (`grading.grade_batch(shared=...)`)."""
    return SharedGrades(session_folder / "shared-grades")


@pytest.fixture(scope="session")
def real_book(session_folder: Path) -> RealBookRun:
    """The real book verified afresh once for the whole run, its workers included.

    tests/real_book.py says why its verdict proves what a run of each test's own did.
    """
    return real_book_run(session_folder)
