"""Gradescope's autograder, run as Gradescope runs it: in a container where bubblewrap cannot work.

The zip is built (`build_autograder`), unpacked into a folder that the
container shows at `/autograder`, and its `setup.sh` and `run_autograder` are
run inside a container made for the test (`container_sandbox`): a fresh root,
real root with every capability but CAP_SYS_ADMIN, new user namespaces
refused by a seccomp filter, a masked /proc, no network. There the
autograder must fall back to running each submission as the user nobody.

What is proved, and what is not: `setup.sh` runs for real, but finds Python,
uv and bubblewrap already there (the machine's, shown read-only) and installs
the project with `uv sync --locked` offline from the machine's uv cache, shown
to the container writable because uv locks it; its apt-get and pip lines,
which need Gradescope's network, do not run. The Python lives under /root
here, whose folders the container opens to every user, as an image's
/usr or /opt would be. Everything after (run_autograder, the permissions it
sets, the grader, the drop to nobody, the limits) runs exactly as shipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from committed import EXERCISES
from container_sandbox import PYTHON_HOME, run_in_container

from bookproof.grade.book import BASELINE
from bookproof.grade.books import load_book
from bookproof.grade.gradescope import build_autograder
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
BOOK = load_book(2)
REFERENCE = {
    "shop_tools.py": ROOT / "solutions" / "book02" / "shop_tools.py",
    "test_book02_mango.py": ROOT / "solutions" / "book02" / "test_book02_mango.py",
}
STARTER = {"shop_tools.py": EXERCISES / "book02" / "shop_tools.py"}
STARTER_SCORE = sum(check.points for check in BOOK.checks if check.kind == BASELINE)
SITE = "/autograder/source/.venv/lib/python3.11/site-packages"
RUNTIME = "/autograder/source/src/sovereign_agent"

# A learner who wants the reference's marks and to poison every later run:
# read the reference (or the grader's checks) and run it as their own; plant
# a .pth file in the environment and a module in the runtime; forge results.
THIEF = """
import glob as _glob
import os as _os

_tried = {}
for _path in [
    "/autograder/source/solutions/book02/shop_tools.py",
    *_glob.glob("/autograder/source/solutions/**/*.py", recursive=True),
]:
    try:
        with open(_path, encoding="utf-8") as _handle:
            exec(compile(_handle.read(), _path, "exec"), globals())
        _tried[_path] = "read"
        break
    except OSError as _exc:
        _tried[_path] = type(_exc).__name__
for _path, _text in [
    ("SITE/planted_by_submission.pth", "import os\\n"),
    ("RUNTIME/planted_by_submission.py", "X = 1\\n"),
    ("/autograder/results/results.json", '{"score": 1000, "tests": []}'),
]:
    try:
        with open(_path, "w", encoding="utf-8") as _handle:
            _handle.write(_text)
    except OSError:
        pass
""".replace("SITE", SITE).replace("RUNTIME", RUNTIME)


def _planted(root: Path) -> list[Path]:
    """The files the thief plants, where they exist."""
    paths = [
        root / SITE.removeprefix("/autograder/") / "planted_by_submission.pth",
        root / RUNTIME.removeprefix("/autograder/") / "planted_by_submission.py",
    ]
    return [path for path in paths if path.exists()]


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The unpacked zip, after its setup.sh ran in the container."""
    root = tmp_path_factory.mktemp("gradescope") / "autograder"
    root.mkdir()
    out = root.parent / "autograder.zip"
    build_autograder(ROOT, BOOK, out)
    with zipfile.ZipFile(out) as archive:
        archive.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / script, 0o755)
    cache = subprocess.run(["uv", "cache", "dir"], capture_output=True, text=True, check=True)
    setup = run_in_container(
        ["bash", "/autograder/source/setup.sh"],
        binds={"/autograder": root, "/uv-cache": Path(cache.stdout.strip())},
        env={
            "HOME": "/root",
            "PATH": f"{PYTHON_HOME}/bin:/usr/bin:/bin",
            "UV_CACHE_DIR": "/uv-cache",
            "UV_OFFLINE": "1",
            "UV_PYTHON": str(PYTHON_HOME / "bin" / "python3"),
            "UV_PYTHON_DOWNLOADS": "never",
        },
        timeout=600,
    )
    assert setup.returncode == 0, setup.stderr
    # Gradescope copies run_autograder beside the source when it builds the image.
    shutil.copyfile(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    return root


def _run(
    root: Path, files: dict[str, Path | str], *, python_for_all: bool = True
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """One submission as Gradescope runs it: a fresh container, the files, run_autograder."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
        (root / folder).mkdir()
    for name, source in files.items():
        text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
        (root / "submission" / name).write_text(text, encoding="utf-8")
    completed = run_in_container(
        ["/autograder/run_autograder"],
        binds={"/autograder": root},
        env={"HOME": "/root"},
        timeout=600,
        python_for_all=python_for_all,
    )
    results_file = root / "results" / "results.json"
    if not results_file.exists():
        return completed, None
    results: dict[str, Any] = json.loads(results_file.read_text(encoding="utf-8"))
    return completed, results


def test_the_reference_gets_full_marks_graded_as_nobody(autograder: Path) -> None:
    completed, results = _run(autograder, dict(REFERENCE))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert results is not None
    assert results["score"] == BOOK.max_points
    assert "unprivileged user 65534" in results["output"]
    assert "bubblewrap could not start a sandbox" not in results["output"]


def test_the_starter_gets_its_baseline(autograder: Path) -> None:
    completed, results = _run(autograder, dict(STARTER))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert results is not None
    assert results["score"] == STARTER_SCORE


def test_a_submission_that_reads_the_reference_gets_no_more_than_the_starter(
    autograder: Path,
) -> None:
    thief = THIEF + STARTER["shop_tools.py"].read_text(encoding="utf-8")
    completed, results = _run(autograder, {"shop_tools.py": thief})
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert results is not None
    # The reference would have given full marks; the forged file said 1000.
    assert results["score"] <= STARTER_SCORE
    assert results["tests"]
    # Nothing planted in the environment or the runtime for the next submission.
    assert _planted(autograder) == []


def test_a_runtime_left_writable_is_caught_and_gets_no_score(autograder: Path) -> None:
    runtime = autograder / "source" / "src" / "sovereign_agent"
    planted = runtime / "planted_by_submission.py"
    thief = THIEF + STARTER["shop_tools.py"].read_text(encoding="utf-8")
    # An image set up carelessly: the runtime's folder open to every user.
    os.chmod(runtime, 0o777)
    try:
        completed, results = _run(autograder, {"shop_tools.py": thief})
        assert planted.exists()  # the write went through: the check must see it
    finally:
        os.chmod(runtime, 0o755)
        planted.unlink(missing_ok=True)
    assert results is None
    assert completed.returncode != 0
    assert "planted_by_submission.py" in completed.stdout
    assert "changed while grading" in completed.stdout


def test_where_no_isolation_can_be_had_there_is_no_score_not_a_zero(autograder: Path) -> None:
    # The Python under a 0700 /root: nobody cannot start it, and bubblewrap is refused.
    completed, results = _run(autograder, dict(REFERENCE), python_for_all=False)
    assert results is None
    assert completed.returncode != 0
    assert "refusing to grade" in completed.stdout
    assert "no grade recorded" in completed.stdout


def test_process_mode_run_by_root_runs_a_writer_as_nobody_and_finishes(autograder: Path) -> None:
    # The instructor's own command, not Gradescope's script: --isolation process, as root.
    thief = THIEF + STARTER["shop_tools.py"].read_text(encoding="utf-8")
    _run(autograder, {"shop_tools.py": thief})  # lays out the submission folder
    completed = run_in_container(
        [
            "/autograder/source/.venv/bin/python",
            "/autograder/source/scripts/grade_exercises.py",
            "--book",
            "2",
            "--isolation",
            "process",
            "/autograder/submission",
        ],
        binds={"/autograder": autograder},
        env={"HOME": "/root"},
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    assert "unprivileged user 65534" in completed.stderr
    assert f"{STARTER_SCORE}/{BOOK.max_points}" in completed.stderr
    assert _planted(autograder) == []


def _process_mode_as_root(autograder: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """The instructor's own command, process mode run by root, where nobody cannot start Python."""
    return run_in_container(
        [
            "/autograder/source/.venv/bin/python",
            "/autograder/source/scripts/grade_exercises.py",
            "--book",
            "2",
            "--isolation",
            "process",
            *flags,
            "/autograder/submission",
        ],
        binds={"/autograder": autograder},
        env={"HOME": "/root"},
        timeout=600,
        python_for_all=False,
    )


def test_process_mode_as_root_refuses_where_nobody_cannot_start_python(autograder: Path) -> None:
    # The Python under a 0700 /root: the switch to nobody cannot be made. The
    # grader used to run the writer as root here, planting files every later
    # run would import; now it refuses before any submission runs.
    thief = THIEF + STARTER["shop_tools.py"].read_text(encoding="utf-8")
    _run(autograder, {"shop_tools.py": thief})  # lays out the submission folder
    try:
        refused = _process_mode_as_root(autograder)
        planted_when_refused = _planted(autograder)
        accepted = _process_mode_as_root(autograder, "--run-submissions-as-root")
        planted_when_accepted = _planted(autograder)
    finally:
        for path in _planted(autograder):
            path.unlink()
    assert refused.returncode == 3, refused.stderr
    lines = refused.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("grade-exercises: refusing to grade: user 65534 cannot start")
    assert "would run each submission as root" in lines[0]
    assert "--run-submissions-as-root" in lines[0]
    assert planted_when_refused == []
    # Accepted explicitly, the submission runs as root: the first line says so,
    # the writes go through, and the batch refuses to finish (exit 4).
    assert "process only, as root" in accepted.stderr
    assert planted_when_accepted != []
    assert accepted.returncode == 4, accepted.stderr
    assert "changed while grading" in accepted.stderr
