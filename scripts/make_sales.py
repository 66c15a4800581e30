"""Write the shop's sales file again: `uv run python scripts/make_sales.py [--check]`.

A thin door into `bookproof.sales_fixture`. `--check` writes nothing and
exits 1 when the committed file differs from what the code makes.
"""

import argparse
import sys
from pathlib import Path

# This checkout's own tooling, even when run by an interpreter that has not
# installed the project.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bookproof.sales_fixture import sales_path, sales_text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the file is stale"
    )
    options = parser.parse_args()
    path = sales_path()
    made = sales_text()
    if options.check:
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != made:
            print(f"{path}: differs from what scripts/make_sales.py makes", file=sys.stderr)
            return 1
        print(f"{path}: up to date")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".csv.tmp")
    temporary.write_text(made, encoding="utf-8")
    temporary.replace(path)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
