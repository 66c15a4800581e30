"""Build the book's website: `uv run python scripts/build_site.py` (into build/site/html).

A thin door into `bookproof.site`; `--help` lists every option.
"""

import sys
from pathlib import Path

# This checkout's own tooling, even when run by an interpreter that has not
# installed the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bookproof.site.cli import build_main

if __name__ == "__main__":
    raise SystemExit(build_main())
