"""Limits a sandboxed process sets on itself, as its first act, before any learner code runs.

That moment is the only one at which all of the process is still the
grader's code, and what is set here cannot be undone later. The limits
themselves are the runtime's (`sovereign_agent.sandbox.confine`): rlimits on
address space, file size, CPU seconds and open files, no core dumps, and a
seccomp filter that refuses new processes (threads stay allowed). One
process is the whole process limit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sovereign_agent.sandbox import confine, forbid_new_processes

__all__ = ["READY", "forbid_new_processes", "start_up"]

# The first bytes every sandboxed process of the grader's writes on its
# stdout, once its limits hold: no learner code can run before them, so a
# process that ends without them never started, which is the machine's
# fault (bubblewrap refused, the interpreter failed), never a learner's.
READY = b"gradechild: limits set\n"


def start_up(
    limits: Mapping[str, int], *, require_filter: bool, forbid_processes: bool = True
) -> None:
    """Limits, the process filter, then the ready line; exit at once if the filter is required
    and cannot be installed (the parent then sees a process that never started).

    Only the oracle, which runs no learner code and forks one server per
    run, starts without the filter; each server installs it for itself.
    """
    if not confine(limits, forbid_processes=forbid_processes) and require_filter:
        os._exit(1)
    os.write(1, READY)
