"""Gradescope's autograder for one exercise book: a zip that uploads as it is.

Gradescope unpacks the zip into `/autograder/source/`, builds an image by
running `setup.sh` there once (as root, on its Ubuntu base image), then, for
each submission, copies the learner's files into `/autograder/submission/`
and runs `run_autograder` as root in a container of that image, which must
leave `/autograder/results/results.json`. Ours installs what is missing
(bubblewrap, Python, uv) and, from the lock file, the project with its
`grading` dependency group and nothing else; `run_autograder`
runs the same grader an instructor runs (`--gradescope`), so the points and
the feedback are the ones the CLI gives.

Gradescope's containers may refuse the user namespaces bubblewrap needs.
Then (`--isolation auto`, the default) each submission runs in process mode
as the unprivileged user nobody, with the same limits: `run_autograder`
first closes the reference, the grader's source and the results folder to
every user but root. A run that cannot grade at all (the grader exits
non-zero) leaves no results.json and exits non-zero: Gradescope records no
score and says the autograder failed, never a 0.

`--try FOLDER` runs the zip as Gradescope would, on this machine, before it
is uploaded: it unpacks it into a temporary tree shaped like Gradescope's
(`source/`, `submission/`, `results/`, `run_autograder`), runs `setup.sh`
there and then `run_autograder` on a copy of the folder, and prints the
`results.json` it left. The scripts find that tree through AUTOGRADER_ROOT;
`setup.sh` installs what is missing, so on a machine with bubblewrap, Python
and uv it only builds the environment (offline with UV_OFFLINE=1 when uv's
cache holds the lock's packages).

The zip holds what grading needs and nothing more: the project's metadata
and lock file, `src/` (the grader and the runtime a submission imports),
the grader's script, and the book's reference solution (its learner-test
checks run faulty versions of it, in the oracle, which runs as root).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bookproof.grade.book import Book, BookError
from bookproof.grade.books import load_book
from bookproof.grade.learner_tests import ROOT

__all__ = [
    "autograder_files",
    "build_autograder",
    "hand_in",
    "main",
    "run_autograder",
    "run_setup",
    "unpack",
]

# The zip's entries are dated, so that building twice gives the same bytes.
_STAMP = (2024, 1, 1, 0, 0, 0)
_SKIPPED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# Only what is missing is installed: an image that has it all needs no network here.
if ! command -v bwrap >/dev/null || ! command -v python3 >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq bubblewrap python3 python3-pip ca-certificates >/dev/null
fi
if ! command -v uv >/dev/null; then
  python3 -m pip install --quiet uv || python3 -m pip install --quiet --break-system-packages uv
fi
# A Python that uv installs goes where every user can read it, not under /root:
# where the container refuses bubblewrap, submissions run as the user nobody.
export UV_PYTHON_INSTALL_DIR="${UV_PYTHON_INSTALL_DIR:-/opt/uv/python}"
cd "${AUTOGRADER_ROOT:-/autograder}/source"
# The project and its `grading` group alone, at the lock's versions: not the
# development tools (the site, the type checker, the providers' SDKs).
uv sync --locked --no-default-groups --group grading --quiet
chmod -R a+rX .venv src/sovereign_agent
if [ -d "$UV_PYTHON_INSTALL_DIR" ]; then chmod -R a+rX "$UV_PYTHON_INSTALL_DIR"; fi
# The reference and the grader are root's alone (run_autograder says so again).
chmod 0700 solutions src/bookproof
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission, as root. It leaves
# results/results.json only when the grader graded: a run that could not grade
# exits non-zero without one, which Gradescope reports as "The autograder failed
# to execute correctly" (no score, never a 0), with this script's output, the
# reason among it, for the instructor.
set -uo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
results="$root/results"
mkdir -p "$results"
rm -f "$results/results.json"
# Nothing of the autograder's for a submission's user to read or write: the
# reference, the grader's source, the results, Gradescope's metadata.
chmod 0700 "$results" "$root/source/solutions" "$root/source/src/bookproof" || exit 1
if [ -e "$root/submission_metadata.json" ]; then
  chmod 0600 "$root/submission_metadata.json" || exit 1
fi
cd "$root/source" || exit 1
python=.venv/bin/python
isolation={isolation}
if [ "$isolation" = auto ]; then
  # bubblewrap where the container allows it; else each submission as nobody.
  probe='import sys; from sovereign_agent.sandbox import bubblewrap_problem as p
sys.exit(p() is not None)'
  if "$python" -c "$probe"; then
    isolation=bubblewrap
  else
    isolation=unprivileged
  fi
fi
"$python" scripts/grade_exercises.py --book {book} --isolation "$isolation" \\
  --gradescope "$results" "$root/submission" > "$results/grader.log" 2>&1
status=$?
# Gradescope shows this output to the instructor, never to the learner.
cat "$results/grader.log"
if [ "$status" -ne 0 ]; then
  rm -f "$results/results.json"
  echo "run_autograder: no grade recorded: the grader exited with status $status."
  exit 1
fi
"""

# The isolation a built autograder grades in; "auto" is bubblewrap where the
# container allows it, else process mode as the user nobody, never weaker.
BUILD_ISOLATION = ("auto", "bubblewrap", "unprivileged")


def _tree(root: Path, relative: str) -> Iterator[Path]:
    base = root / relative
    if base.is_file():
        yield base
        return
    for path in sorted(base.rglob("*")):
        if path.is_file() and not _SKIPPED & set(path.relative_to(root).parts):
            yield path


def autograder_files(root: Path, book: Book) -> list[tuple[str, Path]]:
    """(name in the zip, file) for every source file the autograder needs."""
    needed = [
        "pyproject.toml",
        "uv.lock",
        "README.md",
        "src/bookproof",
        "src/sovereign_agent",
        "scripts/grade_exercises.py",
        # The book's servers: a check may hand one to the submission (book 11's desk).
        "book/textbook/servers",
        f"solutions/{book.folder}/{book.module}.py",
    ]
    files: list[tuple[str, Path]] = []
    for relative in needed:
        for path in _tree(root, relative):
            files.append((path.relative_to(root).as_posix(), path))
    return files


def _add(archive: zipfile.ZipFile, name: str, data: bytes, *, executable: bool) -> None:
    info = zipfile.ZipInfo(name, date_time=_STAMP)
    mode = 0o755 if executable else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def build_autograder(root: Path, book: Book, out: Path, *, isolation: str = "auto") -> None:
    """Write the zip: setup.sh, run_autograder and the sources, all from its root.

    Gradescope unpacks it into /autograder/source and copies run_autograder
    to /autograder/run_autograder.
    """
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", SETUP.encode(), executable=True)
        if isolation not in BUILD_ISOLATION:
            raise ValueError(f"isolation must be one of {BUILD_ISOLATION}, not {isolation!r}")
        run = RUN.format(book=book.number, isolation=isolation)
        _add(archive, "run_autograder", run.encode(), executable=True)
        for name, path in autograder_files(root, book):
            _add(archive, name, path.read_bytes(), executable=False)


# --- running the zip here, as Gradescope would -------------------------------------

# Bounds for a local try: setup.sh may download Python and the packages once.
SETUP_TIMEOUT = 1800.0
RUN_TIMEOUT = 1800.0


def _environment(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # Not this checkout's environment: the zip's scripts make and use their own.
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env["AUTOGRADER_ROOT"] = str(root)
    env.update(extra or {})
    return env


def unpack(archive: Path, root: Path) -> None:
    """Lay the zip out as Gradescope does: source/ holds it, run_autograder sits beside it."""
    source = root / "source"
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(source)
        for info in opened.infolist():
            # extractall drops the modes the zip records; Gradescope keeps them.
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(source / info.filename, mode)
    shutil.copy2(source / "run_autograder", root / "run_autograder")


def run_setup(
    root: Path, env: Mapping[str, str] | None = None, *, timeout: float = SETUP_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """setup.sh, run from source/ as Gradescope runs it when it builds the image."""
    return subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        cwd=root / "source",
        env=_environment(root, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def hand_in(folder: Path, root: Path) -> list[str]:
    """Copy a learner's folder into submission/ (and empty results/), as Gradescope would.

    Regular files, folders and links are copied as they are (a link stays a
    link, for the grader to refuse); anything else (a FIFO, a device) cannot
    be uploaded to Gradescope and is left out. Returns a note per item left out.
    """
    for name in ("submission", "results"):
        shutil.rmtree(root / name, ignore_errors=True)
        (root / name).mkdir()
    notes: list[str] = []
    for path in sorted(folder.rglob("*")):
        target = root / "submission" / path.relative_to(folder)
        if path.is_symlink():
            target.symlink_to(os.readlink(path))
        elif path.is_dir():
            target.mkdir()
        elif path.is_file():
            shutil.copyfile(path, target)
        else:
            notes.append(f"left out {path.relative_to(folder)}: not a file Gradescope could take")
    return notes


def run_autograder(
    root: Path, env: Mapping[str, str] | None = None, *, timeout: float = RUN_TIMEOUT
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """run_autograder on what submission/ holds: its run, and results.json if it left one."""
    completed = subprocess.run(
        [str(root / "run_autograder")],
        cwd=root,
        env=_environment(root, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    results = root / "results" / "results.json"
    if not results.exists():
        return completed, None
    loaded: dict[str, Any] = json.loads(results.read_text(encoding="utf-8"))
    return completed, loaded


def _try(archive: Path, folder: Path, workdir: Path) -> int:
    """Unpack, set up and run the zip on one folder; print results.json to stdout."""
    say = sys.stderr
    unpack(archive, workdir)
    print(f"try: unpacked into {workdir}; running setup.sh", file=say, flush=True)
    setup = run_setup(workdir)
    if setup.returncode != 0:
        say.write(setup.stdout + setup.stderr)
        print(f"try: setup.sh failed (status {setup.returncode})", file=say)
        return 1
    for note in hand_in(folder, workdir):
        print(f"try: {note}", file=say)
    print("try: running run_autograder", file=say, flush=True)
    completed, results = run_autograder(workdir)
    # What Gradescope shows the instructor only: the script's output.
    say.write(completed.stdout + completed.stderr)
    if results is None:
        print(
            "try: no results.json: Gradescope would record no score "
            f"(run_autograder exited with status {completed.returncode})",
            file=say,
        )
        return 1
    print(json.dumps(results, indent=2, ensure_ascii=False))
    later = [test for test in results["tests"] if test.get("visibility", "visible") != "visible"]
    if later:
        print(
            f"try: {len(later)} of {len(results['tests'])} tests are not shown to the learner "
            "now (hidden, or after the due date or publication); the score counts them",
            file=say,
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_gradescope_autograder",
        description="Build the zip to upload as a Gradescope programming assignment's autograder.",
    )
    parser.add_argument("--book", type=int, required=True, help="exercise book number, e.g. 2")
    parser.add_argument("--out", type=Path, help="the zip to write (needed unless --try is given)")
    parser.add_argument(
        "--try",
        dest="try_folder",
        type=Path,
        metavar="FOLDER",
        help="run the built zip on one learner's folder here, as Gradescope would: in a "
        "temporary tree (source/, submission/, results/), setup.sh then run_autograder; "
        "print the results.json it leaves (exit 1 when it leaves none). Set UV_OFFLINE=1 "
        "to install from uv's cache only",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        metavar="DIR",
        help="with --try: build the tree in DIR (an empty or new folder) and keep it; "
        "default: a temporary folder, removed afterwards",
    )
    parser.add_argument(
        "--isolation",
        choices=BUILD_ISOLATION,
        default="auto",
        help="auto (default): bubblewrap where Gradescope's container allows it, else each "
        "submission as the unprivileged user nobody, which cannot read the reference or the "
        "grader; bubblewrap or unprivileged: that mode only. Where the mode cannot be had, "
        "a submission gets no score (Gradescope's 'autograder failed'), never a 0",
    )
    args = parser.parse_args(argv)
    try:
        book = load_book(args.book)
    except BookError as exc:
        print(f"build_gradescope_autograder: {exc}", file=sys.stderr)
        return 2
    problem = _arguments_problem(args)
    if problem is not None:
        parser.print_usage(sys.stderr)
        print(f"build_gradescope_autograder: {problem}", file=sys.stderr)
        return 2
    if args.try_folder is None:
        build_autograder(ROOT, book, args.out, isolation=args.isolation)
        print(f"wrote {args.out}: upload it as the autograder of {book.title}")
        return 0
    with tempfile.TemporaryDirectory(prefix="autograder-try-") as scratch:
        archive = args.out if args.out is not None else Path(scratch) / "autograder.zip"
        build_autograder(ROOT, book, archive, isolation=args.isolation)
        workdir = args.workdir if args.workdir is not None else Path(scratch) / "autograder"
        workdir.mkdir(exist_ok=True)
        return _try(archive, args.try_folder, workdir.resolve())


def _arguments_problem(args: argparse.Namespace) -> str | None:
    """Why the arguments cannot be followed, checked before anything is built."""
    if args.out is None and args.try_folder is None:
        return "give --out (the zip to write), --try FOLDER, or both"
    if args.out is not None and not args.out.parent.is_dir():
        return f"no folder for {args.out}"
    if args.workdir is not None and args.try_folder is None:
        return "--workdir goes with --try"
    if args.try_folder is not None and not args.try_folder.is_dir():
        return f"--try needs a folder: {args.try_folder} is not one"
    if args.workdir is not None:
        if os.path.lexists(args.workdir) and (
            not args.workdir.is_dir() or any(args.workdir.iterdir())
        ):
            return f"--workdir must be a new or empty folder: {args.workdir} is not"
        if not args.workdir.parent.is_dir():
            return f"no folder for --workdir {args.workdir}"
    return None
