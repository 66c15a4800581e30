"""Serve the built website on 127.0.0.1: `uv run python scripts/serve_site.py`.

A thin door into `bookproof.site`; `--help` lists every option.
"""

import sys
from pathlib import Path

# This checkout's own tooling, even when run by an interpreter that has not
# installed the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bookproof.site.cli import serve_main

if __name__ == "__main__":
    raise SystemExit(serve_main())
