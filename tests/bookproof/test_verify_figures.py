"""Figures: drawn by their scripts, compared byte for byte, numbered, captioned, described."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verifying import REPO, verify

from bookproof.verify.figures import find_figures

FIGURE_SCRIPT = '''\
"""A bar per count in counts.txt: the figure's data lives beside it."""

from pathlib import Path

from bookproof.figures.diagrams import Canvas


def draw():
    counts = [int(word) for word in (Path(__file__).parent / "counts.txt").read_text().split()]
    canvas = Canvas(2.0, 1.0)
    for index, count in enumerate(counts):
        canvas.box(0.2 + index * 0.4, 0.1, 0.3, 0.1 * count)
        canvas.text(0.35 + index * 0.4, 0.05, str(count), fontsize=6)
    return canvas.figure
'''

CHAPTER = """\
# A chapter with a figure

Some text.

![Three bars, of heights 2, 5 and 3](figures/bars.svg)

Figure 1.1: Three counts, drawn from counts.txt.

```python
print("fine")
```

```output
fine
```
"""


def draw(folder: Path, *names: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(REPO / "scripts" / "draw_figures.py"), "--folder", str(folder)]
    return subprocess.run(
        [*command, *(["--check"] if check else []), *names],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The figure's folder, drawn once by the real script: each test gets a copy.

    Drawing starts matplotlib in a fresh process, a second or more; the copy is
    the same bytes the drawing wrote.
    """
    figures = tmp_path_factory.mktemp("drawn") / "figures"
    figures.mkdir()
    (figures / "bars.py").write_text(FIGURE_SCRIPT, encoding="utf-8")
    (figures / "counts.txt").write_text("2 5 3\n", encoding="utf-8")
    completed = draw(figures, "bars")
    assert completed.returncode == 0, completed.stderr
    return figures


@pytest.fixture
def book(tmp_path: Path, drawn: Path) -> Path:
    """A chapter outside the manifest whose one figure is drawn and committed."""
    shutil.copytree(drawn, tmp_path / "figures")
    chapter = tmp_path / "chapter.md"
    chapter.write_text(CHAPTER, encoding="utf-8")
    return chapter


def test_a_chapter_whose_figure_matches_its_drawing_holds(book: Path) -> None:
    completed = verify(book)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_changing_the_data_behind_a_figure_without_redrawing_fails_naming_it(
    book: Path,
) -> None:
    (book.parent / "figures" / "counts.txt").write_text("2 5 4\n", encoding="utf-8")
    # One run (each draws the figure afresh, matplotlib and all) for the
    # report on the terminal and the JUnit report it writes beside it.
    junit = book.parent / "report.xml"
    completed = verify(book, "--junit", junit)
    assert completed.returncode == 1
    assert "Figure 1.1 (figures/bars.svg)" in completed.stdout
    assert "no longer matches what" in completed.stdout
    assert "scripts/draw_figures.py bars" in completed.stdout
    case = ElementTree.parse(junit).getroot().find(".//testcase[failure]")
    assert case is not None and case.get("name", "").startswith("figure: ")
    # Redrawing makes it hold again.
    assert draw(book.parent / "figures", "bars").returncode == 0
    assert verify(book).returncode == 0


def test_changing_the_code_behind_a_figure_fails(book: Path) -> None:
    script = book.parent / "figures" / "bars.py"
    script.write_text(script.read_text().replace("0.3, 0.1 * count", "0.3, 0.2 * count"))
    completed = verify(book)
    assert completed.returncode == 1
    assert "Figure 1.1 (figures/bars.svg)" in completed.stdout


def test_a_missing_figure_file_fails(book: Path) -> None:
    (book.parent / "figures" / "bars.svg").unlink()
    completed = verify(book)
    assert completed.returncode == 1
    assert "Figure 1.1 (figures/bars.svg): the figure file" in completed.stdout
    assert "is missing" in completed.stdout


def test_a_script_that_fails_is_reported_with_its_traceback(book: Path) -> None:
    (book.parent / "figures" / "counts.txt").write_text("two\n", encoding="utf-8")
    completed = verify(book)
    assert completed.returncode == 1
    assert "did not draw it" in completed.stdout
    assert "ValueError" in completed.stdout


def test_check_mode_writes_nothing_and_exits_1_on_a_stale_figure(book: Path) -> None:
    figures = book.parent / "figures"
    before = (figures / "bars.svg").read_bytes()
    (figures / "counts.txt").write_text("1\n", encoding="utf-8")
    completed = draw(figures, "bars", check=True)
    assert completed.returncode == 1
    assert "bars.svg: differs" in completed.stderr
    assert (figures / "bars.svg").read_bytes() == before


BOOK_FIGURES = ["ch03_one_run", "ch05_schema", "ch06_tub_flows"]


def _render_in_a_fresh_process(names: list[str], seed: str, out: Path) -> dict[str, bytes]:
    """Each named book figure rendered, in this order, by one new interpreter."""
    out.mkdir()
    code = "import sys; from pathlib import Path; from bookproof.figures.render import render_svg\n"
    code += "for script in map(Path, sys.argv[2:]):\n"
    code += "    (Path(sys.argv[1]) / f'{script.stem}.svg').write_bytes(render_svg(script))\n"
    scripts = [str(REPO / "book" / "textbook" / "figures" / f"{name}.py") for name in names]
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO / "src")}
    subprocess.run(
        [sys.executable, "-c", code, str(out), *scripts],
        capture_output=True,
        check=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )
    return {name: (out / f"{name}.svg").read_bytes() for name in names}


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """Every book figure drawn twice, by two interpreters with different hash seeds.

    One process per seed draws all of them (matplotlib starts once, not once per
    figure), the second in the reverse order: a figure whose bytes depended on
    what was drawn before it in the same process would differ.
    """
    folder = tmp_path_factory.mktemp("renders")
    first = _render_in_a_fresh_process(BOOK_FIGURES, "1", folder / "first")
    second = _render_in_a_fresh_process(BOOK_FIGURES[::-1], "2", folder / "second")
    return first, second


@pytest.mark.parametrize("name", BOOK_FIGURES)
def test_each_book_figure_is_drawn_byte_for_byte_the_same_every_time(
    name: str, renders: tuple[dict[str, bytes], dict[str, bytes]]
) -> None:
    script = REPO / "book" / "textbook" / "figures" / f"{name}.py"
    first, second = renders[0][name], renders[1][name]
    assert first == second
    assert first == script.with_suffix(".svg").read_bytes()
    # Nothing in it says when or with which version it was drawn.
    assert b"<dc:date>" not in first and b"Matplotlib v" not in first


def figures_of(text: str, number: int | None = 1) -> list[tuple[str, str | None]]:
    found = find_figures(Path("/book/chapter.md"), text, number)
    return [(figure.number, figure.problem) for figure in found]


def test_figures_are_numbered_in_order_within_their_chapter() -> None:
    text = (
        "![a](figures/one.svg)\n\nFigure 4.1: One.\n\n"
        "![b](figures/two.svg)\n\nFigure 4.3: Two.\n\n"
        "![c](figures/three.svg)\n\nFigure 5.3: Three.\n"
    )
    (first, _), (second, wrong), (third, elsewhere) = figures_of(text, 4)
    assert first == "4.1" and second == "4.3" and third == "5.3"
    assert wrong is not None and "number it 4.2" in wrong
    assert elsewhere is not None and "is in chapter 4" in elsewhere


def test_a_figure_needs_alt_text_and_a_caption_and_stands_alone() -> None:
    assert figures_of("![](figures/a.svg)\n\nFigure 1.1: A.\n")[0][1] == (
        "the figure has no alt text (the words in ![...]) for a reader who cannot see it"
    )
    ((_, problem),) = figures_of("![a](figures/a.svg)\n\nNo caption here.\n")
    assert problem is not None and 'must start "Figure 1.1: "' in problem
    ((_, problem),) = figures_of("See ![a](figures/a.svg) here.\n\nFigure 1.1: A.\n")
    assert problem == "a figure's image must stand alone in its paragraph"
    ((_, problem),) = figures_of("![a](figures/sub/a.png)\n\nFigure 1.1: A.\n")
    assert problem is not None and "an .svg file directly in figures/" in problem


def test_other_images_are_not_figures() -> None:
    assert figures_of("![logo](images/logo.png)\n\nFigure 1.1: not ours.\n") == []


def test_a_chapter_with_a_wrongly_numbered_figure_fails_at_its_line(book: Path) -> None:
    book.write_text(CHAPTER.replace("Figure 1.1:", "Figure 1.2:"), encoding="utf-8")
    completed = verify(book)
    assert completed.returncode == 1
    assert f"{book.name}:5" in completed.stdout or ":5:" in completed.stdout
    assert "number it 1.1" in completed.stdout


# Parsing only, but on a loaded machine one example can take a while.
@settings(deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "![a](figures/one.svg)",
                "![](figures/two.svg)",
                "Figure 1.1: caption",
                "Figure 1.2: caption",
                "Figure 2.1:",
                "see ![x](figures/x.svg) here",
                "> ![q](figures/q.svg)",
                "- ![l](figures/l.svg)",
                "```\n![c](figures/c.svg)\n```",
                "text",
                "",
            ]
        ),
        max_size=12,
    ),
    st.text(max_size=40),
)
def test_any_chapter_text_gives_figures_each_numbered_in_order_or_with_a_problem(
    paragraphs: list[str], noise: str
) -> None:
    text = "\n\n".join([*paragraphs, noise])
    for position, figure in enumerate(find_figures(Path("/b/ch.md"), text, 1), 1):
        assert figure.problem is not None or figure.number == f"1.{position}"
        assert figure.svg.parent == Path("/b/figures") or figure.problem is not None
