"""Solutions 2's learner-side tests run under the project's pytest, in a subprocess.

Why a subprocess and not `testpaths`: the learner tests import `shop_tools`
from their own folder, exactly as a learner runs them (`pytest` inside the
folder). Collected into the project's session, that bare module name would
be shared by every book's solutions and starters; in a subprocess run from a
temporary copy each run imports the one file it means, and nothing is written
into the repository. Running the same tests against the starter proves they
can fail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions" / "book02"


def _pytest_in_copy(tmp_path: Path, shop_tools: Path) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "book02"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(shop_tools, folder / "shop_tools.py")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_solution_tests_pass_against_the_reference_solution(tmp_path: Path) -> None:
    completed = _pytest_in_copy(tmp_path, SOLUTIONS / "shop_tools.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "14 passed" in completed.stdout


def test_solution_tests_fail_against_the_untouched_starter(tmp_path: Path) -> None:
    completed = _pytest_in_copy(tmp_path, ROOT / "exercises" / "book02" / "shop_tools.py")
    assert completed.returncode == 1
    for name in (
        "test_need_counts_reserved_tubs",
        "test_draft_check_uses_the_reserved_need",
        "test_allowing_the_probe_by_name_makes_it_callable",
        "test_two_rows_under_one_sku_are_refused_at_construction",
    ):
        assert "FAILED test_book02_" in completed.stdout
        assert name in completed.stdout
