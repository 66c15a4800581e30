"""The shop's sales file is what `scripts/make_sales.py` makes, and tells chapter 14's story."""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import Counter
from pathlib import Path

from bookproof.sales_fixture import sales_path, sales_text

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_file_is_what_the_script_makes() -> None:
    assert sales_path().read_bytes() == sales_text().encode("utf-8")
    # Twice the same bytes: the generator is seeded, nothing depends on the day it runs.
    assert sales_text() == sales_text()


def test_the_scripts_check_passes_on_the_committed_file_from_any_folder(
    tmp_path: Path,
) -> None:
    door = [sys.executable, str(ROOT / "scripts/make_sales.py"), "--check"]
    done = subprocess.run(door, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout


def test_four_weeks_of_three_flavours_with_strawberry_ahead_on_saturdays() -> None:
    rows = list(csv.DictReader(sales_path().open(encoding="utf-8")))
    assert len(rows) == 4 * 7 * 3
    assert {row["sku"] for row in rows} == {"SKU-VANILLA", "SKU-CHOCOLATE", "SKU-STRAWBERRY"}
    assert rows[0]["date"] == "2026-11-02" and rows[0]["weekday"] == "Monday"
    assert rows[-1]["date"] == "2026-11-29" and rows[-1]["weekday"] == "Sunday"
    saturdays = Counter[str]()
    everyday = Counter[str]()
    for row in rows:
        everyday[row["sku"]] += int(row["tubs"])
        if row["weekday"] == "Saturday":
            saturdays[row["sku"]] += int(row["tubs"])
    assert saturdays.most_common(1)[0] == ("SKU-STRAWBERRY", 44)
    assert everyday.most_common(1)[0][0] == "SKU-VANILLA"
