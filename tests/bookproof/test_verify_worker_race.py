"""A worker that reports everything and ends before the verifier looks is a worker that finished.

On a busy machine the verifier can be held back between waiting for the
worker's messages and asking whether the worker still runs; a worker that
wrote its last results and ended in that gap used to be judged as having
ended part-way, with every later listing "not run". Here the wait is made to
see nothing at all, so the verifier only ever learns of the results after the
worker has ended: it must still read them and judge every listing.
"""

from __future__ import annotations

import select as real_select
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bookproof.verify import execute
from bookproof.verify.chapter import read_chapter
from bookproof.verify.compose import compose_chapter
from bookproof.verify.isolation import Isolation

CHAPTER = """# Chapter 1. Counting

```python
print("one")
```

```output
one
```

```python
print("two")
```

```output
two
```

```python
print("three")
```

```output
three
```
"""


def blind_select(rlist: Any, wlist: Any, xlist: Any, timeout: float | None = None) -> Any:
    """select that never sees the worker's messages while it waits (timeout > 0)."""
    if timeout:
        time.sleep(min(timeout, 0.05))
        return [], [], []
    return real_select.select(rlist, wlist, xlist, timeout)


def test_results_written_just_before_the_worker_ends_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ch01_counting.md"
    path.write_text(CHAPTER, encoding="utf-8")
    chapter = compose_chapter(read_chapter(path), lambda: ())
    assert len(chapter.listings) == 3
    monkeypatch.setattr(execute, "select", SimpleNamespace(select=blind_select))
    run = execute.run_listings(path, chapter.listings, 30.0, Isolation("none", "test"))
    assert run.stopped is None, run.stopped
    assert [listing.stdout for listing in run.runs] == ["one\n", "two\n", "three\n"]
