"""Drawing a figure script into SVG bytes that are identical on every machine and run.

matplotlib writes SVG deterministically once three things are pinned: the salt
of the ids it gives clip paths and glyphs (`svg.hashsalt`), no date and no
version in the metadata, and text written as text (`svg.fonttype: none`), so
the file holds no glyph outlines that depend on a font file's version. Text is
measured with DejaVu Sans, which matplotlib itself ships, never with whatever
fonts a machine happens to have.
"""

from __future__ import annotations

import io
import runpy
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["FigureScriptError", "render_svg", "svg_of"]

# Everything that shapes the bytes of the SVG and could differ between
# machines or runs. The salt is fixed text, not a secret.
RC_PARAMS: dict[RcKeyType, Any] = {
    "svg.hashsalt": "sovereign-agent-figures",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "path.simplify": False,
    "axes.unicode_minus": False,
}
# "Date" and "Creator" would carry the clock and matplotlib's version.
_METADATA: dict[str, Any] = {"Date": None, "Creator": None}


class FigureScriptError(Exception):
    """A figure script cannot be drawn: it has no draw(), or draw() returned no figure."""


def svg_of(figure: Any) -> bytes:
    """The SVG of a matplotlib Figure, written under the pinned settings."""
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context(RC_PARAMS):
        figure.savefig(buffer, format="svg", metadata=_METADATA)
    return buffer.getvalue()


def render_svg(script: Path) -> bytes:
    """Run `script`'s draw() under the pinned settings and return its SVG.

    The settings are in force while draw() builds the figure, not only while
    it is saved: text sizes and the layout depend on them.
    """
    import matplotlib

    matplotlib.use("svg")  # no display, no GUI toolkit: the same on a laptop and in CI
    namespace = runpy.run_path(str(script), run_name="figure")
    draw = namespace.get("draw")
    if not callable(draw):
        raise FigureScriptError(f"{script}: defines no draw() function")
    with matplotlib.rc_context(RC_PARAMS):
        figure = draw()
        if not isinstance(figure, matplotlib.figure.Figure):
            raise FigureScriptError(
                f"{script}: draw() returned {type(figure).__name__}, not a matplotlib Figure"
            )
        return svg_of(figure)
