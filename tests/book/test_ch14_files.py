"""Chapter 14's checkpoint without bubblewrap: a visible skip, and a failure under CI.

Where bubblewrap is missing the checkpoint says so with the install command,
and fails under REQUIRE_SYSTEM_COMPONENTS=1 as CI sets it. The reader files
(the learner file and checkpoint against the listings, the checkpoint's
output and facts, a silent learner import) are held for every drafted
chapter by tests/book/test_reader_files.py.
"""

from __future__ import annotations

from pathlib import Path

from chapter_files import parts, run_checkpoint

CHECKPOINT = parts(14).checkpoint


def test_without_bubblewrap_the_checkpoint_skips_visibly_and_ci_fails(tmp_path: Path) -> None:
    # A PATH with no bwrap on it: the sandbox cannot be made, and nothing runs.
    bare = {"PATH": str(tmp_path)}
    skipped = run_checkpoint(CHECKPOINT, tmp_path, REQUIRE_SYSTEM_COMPONENTS="0", **bare)
    assert skipped.returncode == 0
    assert skipped.stdout == ""
    assert "sudo apt-get install bubblewrap" in skipped.stderr
    assert skipped.stderr.startswith("skipped: run_python needs a sandbox")
    required = run_checkpoint(CHECKPOINT, tmp_path, REQUIRE_SYSTEM_COMPONENTS="1", **bare)
    assert required.returncode == 1
    assert required.stdout == ""
    assert "sudo apt-get install bubblewrap" in required.stderr
