"""The first code of a learner's test run: limits, the stand-in's socket, then pytest.

`main` is a run in an interpreter of its own (one sandbox per run); `run`
is the same run in a process the zygote forked (`gradechild.zygote`), with
pytest already imported. Either way the process exits with pytest's own
exit status (0: every test passed, 1: a test failed, anything else: the
tests could not run); that number is all the grader takes from the run.
Test output goes to stdout, which the grader drains and never shows.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

from .limits import start_up
from .stand_in import connect

__all__ = ["main"]

# The phases a verdict needs: a property that fails has failed once an example
# fails; shrinking that example (and explaining it) only makes it easier to
# read, and the grader reads nothing but the exit status.
_PROFILE = "bookproof-grading"


def _mentions_hypothesis(folder: str) -> bool:
    """Whether the folder's Python files name Hypothesis: most suites never import it.

    Importing it costs about 0.1 s, nine times a submission; a suite that
    reaches it some other way only keeps Hypothesis's own defaults.
    """
    for entry in os.scandir(folder):
        if entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
            with open(entry.path, "rb") as handle:
                if b"hypothesis" in handle.read(1_000_000):
                    return True
    return False


def _verdicts_without_shrinking() -> None:
    """Make Hypothesis stop at the first failing example, unless the tests choose otherwise.

    Shrinking can take minutes where finding took a second (every step of a
    state machine is a call to the other sandbox), so under load a suite that
    caught a faulty version ran out of time instead. Loaded before the tests
    are imported, this is the default their `settings(...)` build on: a test
    file that names its own phases, or loads its own profile, keeps them.
    """
    try:
        from hypothesis import Phase, settings
    except ImportError:  # tests that do not use Hypothesis need nothing here
        return
    settings.register_profile(
        _PROFILE, phases=(Phase.explicit, Phase.reuse, Phase.generate), database=None
    )
    settings.load_profile(_PROFILE)


def main() -> None:
    run(json.loads(sys.argv[1]))


def run(config: dict[str, Any]) -> None:
    """Limits first, then the socket and pytest; never returns (exits with pytest's status)."""
    start_up(config["limits"], require_filter=config["require_filter"])
    scratch = config.get("scratch")
    if scratch is not None:
        # The tests' temporary folder (pytest's tmp_path lives in it), which
        # the code under test sees too, at the same path.
        os.mkdir(scratch, 0o700)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = None
    connect(config["channel"], scratch)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.chdir(config["workdir"])
    sys.path.insert(0, config["workdir"])
    if _mentions_hypothesis(config["workdir"]):
        _verdicts_without_shrinking()
    import pytest

    status = pytest.main(
        ["-q", "-p", "no:cacheprovider", "--rootdir", config["workdir"], config["file"]]
    )
    sys.stdout.flush()
    os._exit(int(status))
