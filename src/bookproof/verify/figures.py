"""A chapter's figures: found in its Markdown, redrawn by their code, compared byte for byte.

A figure is an image that stands alone in its paragraph and points into the
chapter's `figures/` folder, followed by a caption paragraph that numbers it:

    ![What the figure shows, for a reader who cannot see it](figures/ch03_one_run.svg)

    Figure 3.1: One run of the morning plan, from its recorded trace.

The script beside the SVG (`figures/ch03_one_run.py`) draws it. The verifier
runs every script a chapter shows in one child process (they are book code)
and fails the chapter when a committed SVG differs from what its script draws
now, as it fails a stale `output` block.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bookproof.verify.environment import display_path, python_executable
from bookproof.verify.isolation import Isolation
from bookproof.verify.processes import finish, start
from bookproof.verify.verdict import Failure

__all__ = [
    "FIGURE_FOLDER",
    "REDRAW_COMMAND",
    "FigureRef",
    "FiguresRun",
    "draw_figures",
    "find_figures",
    "judge_figures",
]

FIGURE_FOLDER = "figures"
REDRAW_COMMAND = "uv run python scripts/draw_figures.py"
_CAPTION = re.compile(r"Figure (\d+)\.(\d+): (\S.*)", re.DOTALL)
_NAME = re.compile(r"[A-Za-z0-9_]+\.svg")
# How much of a failed drawing's stderr a failure quotes.
_STDERR_TAIL = 4_000


@dataclass(frozen=True)
class FigureRef:
    """One figure as the chapter shows it; `problem` says what is wrong with its Markdown."""

    line: int  # 1-based line of the image
    src: str
    alt: str
    number: str  # "3.1", as the caption writes it; "" without a caption
    caption: str
    svg: Path
    script: Path
    problem: str | None = None

    @property
    def label(self) -> str:
        return f"Figure {self.number} ({self.src})" if self.number else self.src


def _lone_image(children: Sequence[object]) -> object | None:
    """The image token of an inline that holds nothing else (spaces aside)."""
    images = [c for c in children if getattr(c, "type", "") == "image"]
    others = [
        c
        for c in children
        if getattr(c, "type", "") not in ("image", "softbreak")
        and not (getattr(c, "type", "") == "text" and not getattr(c, "content", "").strip())
    ]
    return images[0] if len(images) == 1 and not others else None


def find_figures(chapter_path: Path, text: str, chapter_number: int | None) -> list[FigureRef]:
    """Every figure the chapter shows, in order, each checked against the format.

    An image is a figure when its address starts with `figures/`; any other
    image is the author's own business. `chapter_number` is the manifest's, or
    None for a chapter outside it (then any chapter number is accepted, but
    figures must still count up from 1).
    """
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    folder = chapter_path.parent
    found: list[FigureRef] = []
    for position, token in enumerate(tokens):
        if token.type != "inline" or token.map is None or not token.children:
            continue
        images = [child for child in token.children if child.type == "image"]
        ours = [image for image in images if str(image.attrGet("src") or "").startswith("figures/")]
        if not ours:
            continue
        line = token.map[0] + 1
        image = ours[0]
        src = str(image.attrGet("src"))
        alt = image.content.strip()
        name = src.removeprefix(f"{FIGURE_FOLDER}/")
        svg = folder / FIGURE_FOLDER / name
        problem: str | None = None
        if _NAME.fullmatch(name) is None:
            problem = (
                f"a figure is an .svg file directly in {FIGURE_FOLDER}/, its name made of "
                f"letters, digits and _: {src!r}"
            )
        elif _lone_image(token.children) is not image or len(ours) > 1:
            problem = "a figure's image must stand alone in its paragraph"
        elif not alt:
            problem = (
                "the figure has no alt text (the words in ![...]) for a reader who cannot see it"
            )
        number = caption = ""
        # The caption is the very next paragraph: paragraph_close, paragraph_open, inline.
        following = tokens[position + 3] if position + 3 < len(tokens) else None
        if (
            following is not None
            and following.type == "inline"
            and tokens[position + 2].type == "paragraph_open"
        ):
            match = _CAPTION.fullmatch(following.content.strip())
            if match is not None:
                number = f"{match[1]}.{match[2]}"
                caption = " ".join(match[3].split())
                expected = len(found) + 1
                if chapter_number is not None and int(match[1]) != chapter_number:
                    problem = problem or (
                        f"Figure {number} is in chapter {chapter_number}: "
                        f"number it {chapter_number}.{expected}"
                    )
                elif int(match[2]) != expected:
                    problem = problem or (
                        f"Figure {number} is the chapter's figure number {expected}: "
                        f"number it {match[1]}.{expected}"
                    )
        if not number:
            problem = problem or (
                "the figure has no caption: the paragraph after it must start "
                f'"Figure {chapter_number or "N"}.{len(found) + 1}: "'
            )
        found.append(
            FigureRef(line, src, alt, number, caption, svg, svg.with_suffix(".py"), problem)
        )
    return found


@dataclass(frozen=True)
class FiguresRun:
    """What the drawer made of a chapter's figure scripts."""

    drawn: dict[str, bytes]  # by script path
    error: str | None = None  # why some or all were not drawn
    seconds: float = 0.0


_REPOSITORY_CODE = Isolation("none", "figures are drawn by the repository's own scripts")


def draw_figures(scripts: list[Path], timeout: float) -> FiguresRun:
    """Draw `scripts` in one child process into a scratch folder; read back what it drew."""
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bookproof-figures-") as out:
        child = start(
            [
                python_executable(),
                "-c",
                "from bookproof.figures.draw import main; main()",
                out,
                *map(str, scripts),
            ],
            stdin=subprocess.DEVNULL,
            # The drawing scripts are the repository's own code, like the
            # verifier, not a listing: they run beside it and write to `out`.
            isolation=_REPOSITORY_CODE,
        )
        error: str | None = None
        try:
            _, stderr = child.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            finish(child, kill=True)
            error = f"drawing the figures did not finish within {timeout:g} s (--timeout)"
        else:
            status, _ = finish(child, kill=False)
            if status != 0:
                tail = stderr.decode("utf-8", errors="replace")[-_STDERR_TAIL:]
                error = f"drawing failed (exit status {status}):\n{tail}"
        drawn = {
            str(script): (Path(out) / f"{script.stem}.svg").read_bytes()
            for script in scripts
            if (Path(out) / f"{script.stem}.svg").is_file()
        }
    return FiguresRun(drawn, error, time.perf_counter() - began)


def _problem(figure: FigureRef, run: FiguresRun | None) -> tuple[str, str] | None:
    """What is wrong with one figure (a message and its detail), in the order an author fixes it."""
    if figure.problem is not None:
        return figure.problem, ""
    if not figure.script.is_file():
        return f"no script draws it: {display_path(figure.script)} is missing", ""
    redraw = f"`{REDRAW_COMMAND} {figure.svg.stem}`"
    if not figure.svg.is_file():
        return f"the figure file {display_path(figure.svg)} is missing; draw it with {redraw}", ""
    drawn = None if run is None else run.drawn.get(str(figure.script))
    if drawn is None:
        detail = run.error if run is not None and run.error else ""
        return f"{display_path(figure.script)} did not draw it", detail
    if drawn != figure.svg.read_bytes():
        return (
            f"{display_path(figure.svg)} no longer matches what {display_path(figure.script)} "
            f"draws; redraw it with {redraw} and read the change",
            "",
        )
    return None


def judge_figures(display: str, figures: list[FigureRef], run: FiguresRun | None) -> list[Failure]:
    """A failure for each figure whose Markdown, files or drawing do not hold."""
    failures: list[Failure] = []
    for figure in figures:
        problem = _problem(figure, run)
        if problem is not None:
            message, detail = problem
            failures.append(
                Failure(display, figure.line, "figure", f"{figure.label}: {message}", detail)
            )
    return failures
