"""The first code of a learner's test run: limits, the stand-in's socket, then pytest.

The process exits with pytest's own exit status (0: every test passed,
1: a test failed, anything else: the tests could not run); that number is
all the grader takes from the run. Test output goes to stdout, which the
grader drains and never shows.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from .limits import start_up
from .stand_in import connect

__all__ = ["main"]


def main() -> None:
    config = json.loads(sys.argv[1])
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
    import pytest

    status = pytest.main(
        ["-q", "-p", "no:cacheprovider", "--rootdir", config["workdir"], config["file"]]
    )
    sys.stdout.flush()
    os._exit(int(status))
