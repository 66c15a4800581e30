"""What the site lets through as HTML, and the title written as text, on any input."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from bookproof.site.rawhtml import ALLOWED_HTML, html_problem
from bookproof.site.sources import markdown_text

# MyST, which reads the site's pages, is markdown-it-py with CommonMark's rules
# for raw HTML and backslash escapes.
PARSER = MarkdownIt("commonmark")


@pytest.mark.parametrize(
    "html",
    [
        "<details>\n<summary>Answers</summary>\n",
        "</details>\n",
        "<summary>\n",
        "  <details>  \n\n</summary>",
    ],
)
def test_the_recall_blocks_tags_pass(html: str) -> None:
    assert html_problem(html) is None


@pytest.mark.parametrize(
    ("html", "found"),
    [
        ('<img src=x onerror="alert(1)">', '<img src=x onerror="alert(1)">'),
        ("<details open>", "<details open>"),
        (
            '<details>\n<summary onclick="x()">Answers</summary>',
            '<summary onclick="x()">Answers</summary>',
        ),
        ("<summary><b>Answers</b></summary>", "<summary><b>Answers</b></summary>"),
        ("<!-- a comment -->", "<!-- a comment -->"),
        ("<details><script>alert(1)</script>", "<details><script>alert(1)</script>"),
    ],
)
def test_anything_else_is_named(html: str, found: str) -> None:
    assert html_problem(html) == found


@given(st.text())
def test_what_passes_holds_no_tag_but_the_allowed_ones(html: str) -> None:
    if html_problem(html) is None:
        rest = ALLOWED_HTML.sub("", html)
        assert "<" not in rest


@given(st.text(min_size=1).filter(lambda text: text.split() != []))
def test_a_title_is_one_heading_of_its_own_text_and_never_html(title: str) -> None:
    tokens = PARSER.parse(f"# {markdown_text(title)}\n")
    assert [token.type for token in tokens] == ["heading_open", "inline", "heading_close"]
    inline = tokens[1]
    assert inline.children is not None
    assert all(child.type == "text" for child in inline.children)
    shown = "".join(child.content for child in inline.children)
    # CommonMark turns NUL into U+FFFD, and a heading's text ends trimmed.
    expected = " ".join(title.split()).replace("\0", "\ufffd")
    assert shown == re.sub(r"[ \t]+$", "", expected)
