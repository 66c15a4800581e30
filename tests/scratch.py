"""Where property tests put the SQLite files they make by the hundred: in memory where possible.

A state machine or a property test commits to a real SQLite file at every
step of hundreds of examples; on a shared, busy disk each commit waits for an
fsync, and that wait was most of those tests' time. A folder under /dev/shm
holds real files all the same (SQLite's locks, journals and WAL behave as on
disk); only the wait is gone. Where the machine has no /dev/shm, tempfile's
own default is used. Only for tests whose files are opened in this process or
its plain children: a bubblewrap sandbox mounts a /dev of its own, where
/dev/shm is empty.
"""

from __future__ import annotations

import os
from pathlib import Path

MEMORY = Path("/dev/shm")


def memory_folder() -> str | None:
    """The `dir` to give tempfile: /dev/shm when it is usable here, else None (the default)."""
    if MEMORY.is_dir() and os.access(MEMORY, os.W_OK):
        return str(MEMORY)
    return None
