"""Finding "chapter 3", "sections 2.4 to 2.9", "Listing 2.7", "Figure 6.1", "Exercise Book 2"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookproof.site.xref import find_mentions


def found(text: str) -> list[tuple[str, str, str]]:
    return [(text[m.start : m.end], m.kind, m.key) for m in find_mentions(text)]


@pytest.mark.parametrize(
    ("text", "mentions"),
    [
        ("At the end of chapter 1, Lucy", [("chapter 1", "chapter", "1")]),
        ("Chapter 10 adds expiry.", [("Chapter 10", "chapter", "10")]),
        ("see section 2.8.", [("section 2.8", "section", "2.8")]),
        (
            "the file from sections 2.4 to 2.9 is",
            [("sections 2.4", "section", "2.4"), ("2.9", "section", "2.9")],
        ),
        (
            "chapters 4, 5 and 6",
            [("chapters 4", "chapter", "4"), ("5", "chapter", "5"), ("6", "chapter", "6")],
        ),
        ("as section\n2.8 shows", [("section\n2.8", "section", "2.8")]),
        ("Listing 2.7 prints", [("Listing 2.7", "listing", "2.7")]),
        ("Figure 6.1 puts", [("Figure 6.1", "figure", "6.1")]),
        ("figures 3.1 and 3.2", [("figures 3.1", "figure", "3.1"), ("3.2", "figure", "3.2")]),
        ("Exercise Book 2 (`x`)", [("Exercise Book 2", "exercise-book", "2")]),
        ("the cell in section 2 prints", [("section 2", "section", "2")]),
        ("chapter 3's loop", [("chapter 3", "chapter", "3")]),
    ],
)
def test_mentions_are_found_with_the_words_that_become_the_link(
    text: str, mentions: list[tuple[str, str, str]]
) -> None:
    assert found(text) == mentions


@pytest.mark.parametrize(
    "text",
    ["a subsection 2.1", "the chapter's end", "section 2.8.1 is finer", "chapter two", "1.5 tubs"],
)
def test_words_that_only_look_like_mentions_are_left_alone(text: str) -> None:
    assert found(text) == []


def test_a_number_of_the_wrong_shape_is_reported_as_malformed() -> None:
    assert [m.malformed for m in find_mentions("chapter 2.8 and Listing 3 and section 2")] == [
        True,
        True,
        False,
    ]
    assert [m.malformed for m in find_mentions("Figure 3 and figure 3.1")] == [True, False]


@given(st.text(max_size=200))
def test_mentions_in_any_text_are_ordered_disjoint_spans_ending_with_their_number(
    text: str,
) -> None:
    mentions = find_mentions(text)
    position = 0
    for mention in mentions:
        assert position <= mention.start < mention.end <= len(text)
        assert text[mention.start : mention.end].endswith(mention.key)
        position = mention.end


@given(
    st.sampled_from(["chapter", "Chapter", "chapters", "Exercise Book"]),
    st.integers(min_value=1, max_value=99),
    st.sampled_from(["", ".", ",", ";", "'s", " and more"]),
)
def test_a_numbered_noun_is_found_whatever_follows_it(noun: str, number: int, tail: str) -> None:
    text = f"As {noun} {number}{tail}"
    assert found(text)[0] == (f"{noun} {number}", found(text)[0][1], str(number))
