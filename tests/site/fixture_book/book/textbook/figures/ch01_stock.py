"""Figure 1.1 of the fixture book: the tubs of each flavour, one bar each."""

from typing import Any

from bookproof.figures.diagrams import Canvas

STOCK = {"vanilla": 2, "chocolate": 7}


def draw() -> Any:
    canvas = Canvas(2.4, 1.2)
    for index, (flavour, tubs) in enumerate(STOCK.items()):
        canvas.box(0.3 + index * 1.0, 0.3, 0.6, 0.1 * tubs)
        canvas.text(0.6 + index * 1.0, 0.15, f"{flavour} {tubs}", fontsize=7)
    return canvas.figure
