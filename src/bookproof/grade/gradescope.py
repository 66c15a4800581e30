"""Gradescope's autograder for one exercise book: a zip that uploads as it is.

Gradescope unpacks the zip into `/autograder/source/`, builds an image by
running `setup.sh` there once (as root, on its Ubuntu base image), then, for
each submission, copies the learner's files into `/autograder/submission/`
and runs `run_autograder` as root in a container of that image, which must
leave `/autograder/results/results.json`. Ours installs what is missing
(bubblewrap, Python, uv) and the project from its lock file; `run_autograder`
runs the same grader an instructor runs (`--gradescope`), so the points and
the feedback are the ones the CLI gives.

Gradescope's containers may refuse the user namespaces bubblewrap needs.
Then (`--isolation auto`, the default) each submission runs in process mode
as the unprivileged user nobody, with the same limits: `run_autograder`
first closes the reference, the grader's source and the results folder to
every user but root. A run that cannot grade at all (the grader exits
non-zero) leaves no results.json and exits non-zero: Gradescope records no
score and says the autograder failed, never a 0.

The zip holds what grading needs and nothing more: the project's metadata
and lock file, `src/` (the grader and the runtime a submission imports),
the grader's script, and the book's reference solution (its learner-test
checks run faulty versions of it, in the oracle, which runs as root).
"""

from __future__ import annotations

import argparse
import stat
import sys
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from bookproof.grade.book import Book, BookError
from bookproof.grade.books import load_book
from bookproof.grade.learner_tests import ROOT

__all__ = ["autograder_files", "build_autograder", "main"]

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
uv sync --locked --quiet
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_gradescope_autograder",
        description="Build the zip to upload as a Gradescope programming assignment's autograder.",
    )
    parser.add_argument("--book", type=int, required=True, help="exercise book number, e.g. 2")
    parser.add_argument("--out", type=Path, required=True, help="the zip to write")
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
    if not args.out.parent.is_dir():
        print(f"build_gradescope_autograder: no folder for {args.out}", file=sys.stderr)
        return 2
    build_autograder(ROOT, book, args.out, isolation=args.isolation)
    print(f"wrote {args.out}: upload it as the autograder of {book.title}")
    return 0
