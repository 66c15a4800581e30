"""The figure drawer the verifier starts: draws figure scripts into a folder it names.

Run as `python -c "from bookproof.figures.draw import main; main()" OUT SCRIPT...`.
Figure scripts are book code (they run the chapter's checkpoint, open a store),
so they run in this separate process, never in the verifier's own. Each script
that fails is named on stderr with its traceback; the exit status is 1 then.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    from bookproof.figures.render import render_svg

    out, *scripts = sys.argv[1:] if argv is None else argv
    failed = False
    for script in map(Path, scripts):
        try:
            svg = render_svg(script)
        except Exception:
            failed = True
            print(f"{script}: drawing failed:\n{traceback.format_exc()}", file=sys.stderr)
            continue
        (Path(out) / f"{script.stem}.svg").write_bytes(svg)
    sys.exit(1 if failed else 0)
