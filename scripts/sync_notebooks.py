"""Regenerate every exercise book's notebooks from their plans.

uv run python scripts/sync_notebooks.py [--check]
"""

from bookproof.notebooks.sync import main

if __name__ == "__main__":
    raise SystemExit(main())
