"""What a submission's process sees: scrubbed environment, one extra pipe, a temporary copy, limits.

These tests run the real harness in a real child process over a small
module that reports on its own surroundings, and read the raw observations.
"""

from __future__ import annotations

import os
import random
import sys
import textwrap
from pathlib import Path

from bookproof.grade.books import load_book
from bookproof.grade.checks import Trial, call
from bookproof.grade.runner import Limits, _run_child, grade_submission

ROOT = Path(__file__).resolve().parents[2]

SPY = textwrap.dedent(
    """
    import os
    import resource

    def env_keys():
        return sorted(os.environ)

    def open_fds():
        return sorted(int(name) for name in os.listdir("/proc/self/fd"))

    def where():
        return os.getcwd()

    def memory_limit():
        return resource.getrlimit(resource.RLIMIT_AS)[0]

    def can_read_stdin():
        return os.read(0, 100).decode()
    """
)


def _observe(tmp_path: Path, *functions: str) -> list[object]:
    folder = tmp_path / "spy"
    folder.mkdir()
    (folder / "spy.py").write_text(SPY, encoding="utf-8")
    trial = Trial(tuple(call(name) for name in functions), lambda results: None)
    limits = Limits(timeout=30, memory_bytes=512 * 1024 * 1024)
    run = _run_child(folder, "spy", [trial], limits)
    assert run is not None and run.done
    return [run.results[0][i].value for i in range(len(functions))]


def test_child_sees_a_scrubbed_environment_and_a_temporary_copy(tmp_path: Path) -> None:
    os.environ["BOOKPROOF_TEST_SECRET"] = "secret-token-env"
    try:
        keys, cwd = _observe(tmp_path, "env_keys", "where")
    finally:
        del os.environ["BOOKPROOF_TEST_SECRET"]
    assert keys == ["HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]
    assert Path(str(cwd)).name == "submission"
    assert not Path(str(cwd)).is_relative_to(tmp_path)
    assert not Path(str(cwd)).exists()  # removed once grading finished


def test_child_inherits_only_the_standard_streams_and_the_result_pipe(tmp_path: Path) -> None:
    leaked = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(leaked, True)  # even a descriptor marked inheritable stays behind
    try:
        (fds,) = _observe(tmp_path, "open_fds")
    finally:
        os.close(leaked)
    assert isinstance(fds, list)
    # 0, 1, 2, the result pipe, and the descriptor listdir itself opened.
    # Numbers are per process, so count: nothing of ours beyond the one pipe.
    assert fds[:3] == [0, 1, 2]
    assert len(fds) == 5


def test_memory_limit_is_set_before_the_submission_runs(tmp_path: Path) -> None:
    (limit,) = _observe(tmp_path, "memory_limit")
    assert limit == 512 * 1024 * 1024


def test_orders_on_stdin_are_gone_before_the_submission_runs(tmp_path: Path) -> None:
    (text,) = _observe(tmp_path, "can_read_stdin")
    assert text == ""


def test_grading_never_imports_a_submission_into_the_grader() -> None:
    grade_submission(ROOT / "solutions" / "book02", load_book(2), Limits(), random.Random(1))
    assert "shop_tools" not in sys.modules
