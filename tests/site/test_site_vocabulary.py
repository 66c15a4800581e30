"""Reading a chapter's Vocabulary section: every well-formed item, and a clear error otherwise."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookproof.layout import REPO_ROOT
from bookproof.site.vocabulary import Term, VocabularyError, parse_vocabulary, read_vocabulary

REPO = REPO_ROOT


def vocabulary(items: str) -> str:
    return "# Chapter 9. Test\n\nText.\n\n## Vocabulary\n\n" + textwrap.dedent(items)


def error_of(text: str) -> str:
    with pytest.raises(VocabularyError) as caught:
        parse_vocabulary("ch09.md", text)
    return str(caught.value)


@pytest.mark.parametrize("chapter", sorted((REPO / "book" / "textbook").glob("ch*.md")))
def test_every_chapter_of_the_book_has_a_readable_vocabulary(chapter: Path) -> None:
    terms = read_vocabulary(chapter)
    assert terms and all(term.term and term.definition for term in terms)


def test_a_wrapped_item_keeps_its_markdown_and_joins_its_lines() -> None:
    terms = parse_vocabulary(
        "ch09.md",
        vocabulary(
            """\
            - **Lax mode / strict mode**: Pydantic converting plausible values (`"6"` to
              6) versus accepting only the declared type.
            - **Observation:** the dispatcher's answer, [see](ch02.md).
            """
        ),
    )
    assert terms == (
        Term(
            "Lax mode / strict mode",
            'Pydantic converting plausible values (`"6"` to 6) versus accepting only the '
            "declared type.",
            7,
        ),
        Term("Observation", "the dispatcher's answer, [see](ch02.md).", 9),
    )


def test_the_section_ends_at_the_next_heading_of_its_level() -> None:
    text = vocabulary("- **Tool**: a function.\n\n## Answers\n\nA paragraph is fine here.\n")
    assert [term.term for term in parse_vocabulary("ch09.md", text)] == ["Tool"]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ("- Tool: a function.\n", "ch09.md:7: the item does not start with a bold term"),
        ("- **Tool** a function.\n", "ch09.md:7: no colon after the bold term"),
        ("- **Tool**:\n", "ch09.md:7: 'Tool' has no definition after its colon"),
        ("- **Tool** and **loop**: x.\n", "ch09.md:7: the term must be one bold span"),
        ("1. **Tool**: a function.\n", "ch09.md:7: only a bullet list belongs"),
        ("Intro.\n\n- **Tool**: a function.\n", "found a paragraph"),
        ("- **Tool**: x.\n\n  More.\n", "ch09.md:9: a vocabulary item holds one paragraph"),
        ("- **Tool**: x.\n  - **Sub**: y.\n", "found a nested list in it"),
        ("- **Tool**: x.\n- **tool**: y.\n", "ch09.md:8: 'tool' is defined twice"),
        ("", "ch09.md:5: the Vocabulary section defines no term"),
    ],
)
def test_a_malformed_vocabulary_is_refused_with_file_and_line(items: str, message: str) -> None:
    assert message in error_of(vocabulary(items))


def test_a_chapter_without_vocabulary_is_refused() -> None:
    assert "ch09.md: no `## Vocabulary` section" in error_of("# Chapter 9\n\nText.\n")


def test_two_vocabulary_sections_are_refused() -> None:
    text = vocabulary("- **A**: b.\n") + "\n## Vocabulary\n\n- **C**: d.\n"
    assert "ch09.md:9: 2 Vocabulary sections (lines 5, 9)" in error_of(text)


_words = st.text(
    alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd"), max_codepoint=0x24F),
    min_size=1,
    max_size=12,
)
_phrases = st.lists(_words, min_size=1, max_size=8).map(" ".join)


@given(
    st.lists(
        st.tuples(_phrases, _phrases), min_size=1, max_size=6, unique_by=lambda t: t[0].casefold()
    ),
    st.integers(min_value=20, max_value=70),
)
def test_any_list_of_terms_reads_back_as_written_however_it_is_wrapped(
    entries: list[tuple[str, str]], width: int
) -> None:
    items = "".join(
        textwrap.fill(
            f"**{term}**: {definition}", width, initial_indent="- ", subsequent_indent="  "
        )
        + "\n"
        for term, definition in entries
    )
    terms = parse_vocabulary("ch09.md", vocabulary(items))
    assert [(term.term, term.definition) for term in terms] == entries


@given(st.text(max_size=300))
def test_any_text_after_the_heading_reads_or_fails_with_a_vocabulary_error(items: str) -> None:
    try:
        terms = parse_vocabulary("ch09.md", vocabulary(items))
    except VocabularyError as error:
        assert str(error).startswith("ch09.md")
    else:
        assert all(term.term and term.definition for term in terms)
