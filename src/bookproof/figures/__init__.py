"""The book's figures: drawn by code in the repository, from the book's own data.

Each figure `book/textbook/figures/NAME.svg` is drawn by the script beside it,
`NAME.py`, whose `draw()` returns a matplotlib Figure. `render` turns that
figure into SVG bytes that are the same on every machine; the verifier redraws
every figure a chapter shows and fails the chapter when the committed file
differs; `scripts/draw_figures.py` redraws them for an author.
"""
