"""How a chapter page's links read once the chapter sits in book.html, link by link."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.site.onepage import link_in_whole_book

CH02 = "book/textbook/ch02_tools.html"
CHAPTERS = {"book/textbook/ch01_call.html": 1, CH02: 2}


def link(href: str) -> str:
    return link_in_whole_book(CH02, 2, CHAPTERS, href)


def test_a_link_into_a_chapter_stays_on_the_one_page() -> None:
    assert link("#section-2-8") == "#ch2-section-2-8"
    assert link("ch01_call.html#vocabulary") == "#ch1-vocabulary"
    assert link("ch01_call.html") == "#ch1"
    assert link("") == "#ch2"
    assert link("../../book/textbook/ch01_call.html#listing-1-3") == "#ch1-listing-1-3"


def test_a_link_to_another_page_keeps_its_target_from_the_site_root() -> None:
    assert link("../../glossary.html#term-tool") == "glossary.html#term-tool"
    assert link("../../exercises/book02/README.html") == "exercises/book02/README.html"
    assert link("../../_images/ch02.svg") == "_images/ch02.svg"
    assert link("../../search.html?q=tool") == "search.html?q=tool"
    assert link("../../") == "index.html"


def test_a_link_elsewhere_is_left_as_written() -> None:
    for href in ("https://docs.pydantic.dev/", "mailto:lucy@example.org", "http://[::1"):
        assert link(href) == href


@settings(max_examples=examples(200))
@given(st.text(max_size=60))
def test_any_href_becomes_an_anchor_here_a_site_path_or_itself(href: str) -> None:
    result = link(href)
    assert isinstance(result, str)
    if result.startswith("#"):
        assert result == "#ch1" or result == "#ch2" or result.startswith(("#ch1-", "#ch2-"))
    else:
        assert result == href or not result.startswith(("/", "../"))
