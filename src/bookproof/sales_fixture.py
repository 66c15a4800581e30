"""The shop's sales file, `book/textbook/data/sales.csv`: made here, the same bytes on every run.

Four weeks of daily tubs sold per flavour, the three flavours of the shop
fixture, Monday 2 November to Sunday 29 November 2026. Each day's number is
a flavour's usual sale for that day of the week plus a small variation drawn
from a seeded generator: the file is invented, but made by code anyone can
rerun (`scripts/make_sales.py`), and a test proves the committed file is
what that code makes.

The shape is a story the data can tell: vanilla sells most over a week, and
strawberry, which families buy for Saturday parties, sells most on Saturdays.
"""

from __future__ import annotations

import csv
import io
import random
from datetime import date, timedelta
from pathlib import Path

from bookproof.layout import default_layout

__all__ = ["FIRST_DAY", "SEED", "WEEKS", "sales_path", "sales_text"]

FIRST_DAY = date(2026, 11, 2)  # a Monday
WEEKS = 4
SEED = 14
# Usual tubs sold, Monday first, by sku.
USUAL: dict[str, tuple[int, ...]] = {
    "SKU-VANILLA": (6, 5, 6, 7, 8, 9, 8),
    "SKU-CHOCOLATE": (4, 4, 5, 5, 7, 8, 7),
    "SKU-STRAWBERRY": (2, 2, 3, 3, 5, 11, 4),
}


def sales_text() -> str:
    """The whole file: a header, then one row per day and flavour, in date order."""
    draw = random.Random(SEED)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["date", "weekday", "sku", "tubs"])
    for offset in range(WEEKS * 7):
        day = FIRST_DAY + timedelta(days=offset)
        for sku, usual in USUAL.items():
            tubs = max(0, usual[day.weekday()] + draw.randint(-2, 2))
            writer.writerow([day.isoformat(), day.strftime("%A"), sku, tubs])
    return buffer.getvalue()


def sales_path() -> Path:
    return default_layout().textbook / "data" / "sales.csv"
