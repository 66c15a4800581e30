"""Copy an exercise book to work/bookNN/: `uv run python scripts/start_exercises.py 2`."""

from bookproof.workspace import main

if __name__ == "__main__":
    raise SystemExit(main())
