"""Lay out a planned chapter: `uv run python scripts/new_chapter.py N "Title"`.

A thin door into `bookproof.new_chapter`; `--help` lists every option.
"""

import sys
from pathlib import Path

# This checkout's own tooling, even when run by an interpreter that has not
# installed the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bookproof.new_chapter import main

if __name__ == "__main__":
    raise SystemExit(main())
