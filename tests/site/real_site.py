"""The real book's site built once per test session, for every test file that browses it.

Building the real book's site runs Sphinx over every chapter and exercise
book: tens of seconds. Each browser test file used to build its own copy
from the same report. Here the first of them runs `build_site.py --report`
on the session's verification of the book (tests/real_book.py), exactly as a
reader builds it, and the others serve the same folder.

Why this proves what a build of their own proved: it is this session's build
of the repository's files, from this session's fresh report (the builder
refuses a report older than any file it vouches for); no test writes into the
built folder, which is only served.

Under pytest-xdist the workers share it through the run's own folder, under
an exclusive lock: the worker that comes second waits for the first's build
and serves it.
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from real_book import RealBookRun
from site_building import build

from bookproof.verify.environment import DEFAULT_MANIFEST

__all__ = ["RealSite", "real_site_build"]


@dataclass(frozen=True)
class RealSite:
    """The built site's html folder, and the verification report it was built from."""

    html: Path
    report: Any  # the report's JSON, as the builder read it


def real_site_build(session_folder: Path, real_book: RealBookRun) -> RealSite:
    """This session's site of the real book: built by the first caller, served by the rest.

    A build that failed fails every caller with the builder's own words, and is
    not tried again: the second attempt would build the same files.
    """
    folder = session_folder / "real-book-site"
    folder.mkdir(exist_ok=True)
    out = folder / "site"  # made by the builder: it never clears a folder it did not make
    result = folder / "result.json"
    with (folder / "lock").open("w") as lock:
        # Held while building: a second worker waits here, then reads the result.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result.is_file():
            completed = build(DEFAULT_MANIFEST, out, "--report", real_book.report)
            recorded = {
                "returncode": completed.returncode,
                "stdout": completed.stdout,
                "stderr": completed.stderr,
            }
            # Written whole, then renamed: a build killed half-way leaves no result.
            partial = folder / "result.partial"
            partial.write_text(json.dumps(recorded), encoding="utf-8")
            partial.replace(result)
        recorded = json.loads(result.read_text(encoding="utf-8"))
    assert recorded["returncode"] == 0, recorded["stdout"] + recorded["stderr"]
    # Built from the session's report, never by verifying the book again.
    assert "verifying the book first" not in recorded["stdout"]
    return RealSite(out / "html", json.loads(real_book.report.read_text(encoding="utf-8")))
