"""The learner-test watcher wakes when a run ends, and leaves the run unreaped for `stop`.

A run's end used to be noticed at the watcher's next poll, up to 0.2 s after
its pipes closed, nine times a submission. A pidfd in the watcher's selector
wakes it at the exit itself. It must not reap the process: `stop` kills the
run's whole group only while the process is unreaped (its pid cannot have
been reused), so a run that left a process behind would otherwise keep it.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest

from bookproof.grade.learner_tests import _exit_descriptor
from bookproof.grade.sandbox import exited, stop

pytestmark = pytest.mark.skipif(
    not hasattr(os, "pidfd_open"), reason="pidfd_open is Linux's; elsewhere the watcher polls"
)

# Waits for a line on stdin, closes its pipes, then leaves a child behind in
# its group (a sleep) and exits: a run that ends with something still running.
RUN = """
import os, subprocess, sys
sys.stdin.readline()
child = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
os.close(2)
sys.exit(0)
"""


def test_the_descriptor_is_readable_exactly_when_the_run_has_ended_and_leaves_it_unreaped() -> None:
    run = subprocess.Popen(
        [sys.executable, "-c", RUN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    ended = _exit_descriptor(run)
    assert ended is not None
    try:
        # Still running (it waits for its line): not readable.
        assert select.select([ended], [], [], 0.3)[0] == []
        assert not exited(run)
        assert run.stdin is not None and run.stdout is not None
        run.stdin.write(b"go\n")
        run.stdin.close()
        left_behind = int(run.stdout.readline())
        assert select.select([ended], [], [], 30)[0] == [ended]
        assert exited(run)
        # Not reaped by the descriptor: stop() can still kill the run's group.
        assert run.returncode is None
        stop(run)
        assert run.returncode == 0
        # The sleep it left behind was in its group, and is gone with it.
        with pytest.raises(ProcessLookupError):
            for _ in range(200):
                os.kill(left_behind, 0)
                time.sleep(0.05)
    finally:
        os.close(ended)
        stop(run)
