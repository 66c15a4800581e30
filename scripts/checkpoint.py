"""Run a chapter's checkpoint by number: `uv run python scripts/checkpoint.py 2`."""

from bookproof.run_checkpoint import main

if __name__ == "__main__":
    raise SystemExit(main())
