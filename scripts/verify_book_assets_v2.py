"""Verify the book: `uv run python scripts/verify_book_assets_v2.py --textbook`.

A thin door into `bookproof.verify`; `--help` lists every option.
"""

import sys
from pathlib import Path

# This checkout's own tooling, even when run by an interpreter that has not
# installed the project: the verifier proves the repository that holds it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bookproof.verify.cli import main

if __name__ == "__main__":
    main()
