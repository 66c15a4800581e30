"""Gradescope's autograder for one exercise book: a zip that uploads as it is.

Gradescope unpacks the zip into `/autograder/source/`, builds an image by
running `setup.sh` there once (as root, on its Ubuntu base image), then, for
each submission, copies the learner's files into `/autograder/submission/`
and runs `run_autograder`,
which must leave `/autograder/results/results.json`. Ours installs
bubblewrap and uv, and the project from its lock file; `run_autograder` runs
the same grader an instructor runs (`--gradescope`), so the points and the
feedback are the ones the CLI gives.

The zip holds what grading needs and nothing more: the project's metadata
and lock file, `src/` (the grader and the runtime a submission imports),
the grader's script, and the book's reference solution (its learner-test
checks run faulty versions of it). The reference never reaches a
submission's sandbox; in process-only mode it is readable by the submission,
which is one reason that mode must be chosen explicitly.
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
from bookproof.grade.sandbox import Isolation

__all__ = ["autograder_files", "build_autograder", "main"]

# The zip's entries are dated, so that building twice gives the same bytes.
_STAMP = (2024, 1, 1, 0, 0, 0)
_SKIPPED = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq bubblewrap python3 python3-pip ca-certificates >/dev/null
python3 -m pip install --quiet uv || python3 -m pip install --quiet --break-system-packages uv
cd /autograder/source
uv sync --locked --quiet
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission; it must leave results/results.json.
set -uo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
mkdir -p "$root/results"
cd "$root/source"
uv run --locked --offline python scripts/grade_exercises.py \\
  --book {book} --isolation {isolation} --gradescope "$root/results" \\
  "$root/submission" > "$root/results/grader.log" 2>&1
status=$?
if [ "$status" -ne 0 ]; then
  # No grade without the sandbox asked for: say so, in the results themselves.
  python3 - "$root/results/results.json" "$status" "$root/results/grader.log" <<'EOF'
import json, sys
path, status, log = sys.argv[1], sys.argv[2], sys.argv[3]
with open(log, encoding="utf-8", errors="replace") as handle:
    tail = handle.read()[-2000:]
message = (
    "The autograder could not grade this submission (grader exit status " + status + "). "
    "Your instructor can read why below.\\n\\n" + tail
)
with open(path, "w", encoding="utf-8") as handle:
    json.dump({{"score": 0, "output": message, "visibility": "visible", "tests": []}}, handle)
EOF
fi
exit 0
"""


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


def build_autograder(root: Path, book: Book, out: Path, *, isolation: Isolation) -> None:
    """Write the zip: setup.sh, run_autograder and the sources, all from its root.

    Gradescope unpacks it into /autograder/source and copies run_autograder
    to /autograder/run_autograder.
    """
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", SETUP.encode(), executable=True)
        run = RUN.format(book=book.number, isolation=isolation.value)
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
        choices=[mode.value for mode in Isolation],
        default=Isolation.BUBBLEWRAP.value,
        help="bubblewrap (default): a submission that cannot be sandboxed gets no grade and a "
        "message saying why; process: accept the weaker mode, in which a submission can read "
        "the autograder's files (the reference solution among them)",
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
    build_autograder(ROOT, book, args.out, isolation=Isolation(args.isolation))
    print(f"wrote {args.out}: upload it as the autograder of {book.title}")
    return 0
