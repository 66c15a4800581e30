"""Each chapter's page of the real book's site in a real headless Chromium, at a desktop's width.

Each chapter is saved as a screenshot at 1,280 px under
`build/site-screenshots/` when asked for (tests/site/browsing.py says when);
its phone width is test_site_browser_phone.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import (
    CHAPTER_IDS,
    DRAFTED,
    LAPTOP,
    Visit,
    chapter_report,
    keep_screenshot,
    page_path,
    visit,
)
from markdown_it import MarkdownIt
from playwright.sync_api import BrowserContext
from real_site import RealSite

from bookproof.verify.manifest import ManifestChapter

pytestmark = pytest.mark.slow  # the site is built from a verification of the whole book


@pytest.fixture(scope="module", params=DRAFTED, ids=CHAPTER_IDS)
def chapter_page(
    request: pytest.FixtureRequest, browser: BrowserContext, site_url: str
) -> Iterator[tuple[ManifestChapter, Visit]]:
    """A chapter's page at 1,280 px, opened once for the tests that only read it.

    Module-scoped with a parameter: pytest runs the tests of one chapter that
    use it together and closes its page before the next chapter's opens. The
    copy-button test, which clicks, scrolls and writes the clipboard, opens
    its own page.
    """
    chapter: ManifestChapter = request.param
    seen = visit(browser, site_url + page_path(chapter), LAPTOP)
    try:
        yield chapter, seen
    finally:
        seen.page.close()


def test_a_chapter_page_shows_each_listing_the_verifier_proved_and_marks_it_verified(
    chapter_page: tuple[ManifestChapter, Visit], real_site: RealSite
) -> None:
    chapter, seen = chapter_page
    proved = chapter_report(real_site.report, chapter)["listings"]
    page = seen.page
    assert page.locator("article .listing").count() == proved["total"]
    assert page.locator("article .listing .badge-verified").count() == proved["passed"]
    banner = page.locator("article #verification")
    assert banner.locator(".verified-count").inner_text() == str(proved["total"])
    numbers = page.locator("article .listing .listing-number").all_inner_texts()
    assert numbers == [f"Listing {chapter.number}.{k}" for k in range(1, len(numbers) + 1)]


# --- what readers of mdBook and d2l reach for ---------------------------------------

# The fences a reader copies: code to run or type, never what a program printed.
CODE_FENCES = ("python", "bash")


def code_fences(chapter: ManifestChapter) -> list[str]:
    """Each fence of code in the chapter, in order, exactly as the Markdown holds it."""
    assert chapter.text is not None
    tokens = MarkdownIt("commonmark").parse(chapter.text.read_text(encoding="utf-8"))
    return [
        token.content.removesuffix("\n")
        for token in tokens
        if token.type == "fence" and token.info.split(maxsplit=1)[:1] in ([f] for f in CODE_FENCES)
    ]


# Each copy button of the page, clicked in turn by one script run in the page
# (a round trip from Python per button cost a second or more per block): for
# each, the button is scrolled into view and must be the element a reader's
# pointer reaches at its centre; the clipboard is first set to a text no block
# holds; the button is clicked, must say "Copied", and what the clipboard then
# holds is read back. Returns one record per button, in the page's order.
_CLICK_EVERY_COPY_BUTTON = """async () => {
    const buttons = [...document.querySelectorAll('article button.copy-code')];
    const clicked = [];
    for (const [index, button] of buttons.entries()) {
        // Instantly, never with the theme's smooth scroll: the box is measured next.
        button.scrollIntoView({block: 'center', behavior: 'instant'});
        const box = button.getBoundingClientRect();
        const reached = document.elementFromPoint(
            box.left + box.width / 2, box.top + box.height / 2);
        const unset = `clipboard not yet written by block ${index + 1}`;
        await navigator.clipboard.writeText(unset);
        button.click();
        // Until the button answers (it says "Copied" for 2 s), within a bound.
        const started = performance.now();
        while (button.textContent !== 'Copied' && performance.now() - started < 10000) {
            await new Promise(resolve => setTimeout(resolve, 5));
        }
        clicked.push({
            reachable: reached === button,
            said: button.textContent,
            copied: await navigator.clipboard.readText(),
        });
    }
    return clicked;
}"""


@pytest.mark.parametrize("chapter", DRAFTED, ids=CHAPTER_IDS)
def test_every_block_of_code_has_a_copy_button_that_copies_exactly_its_code(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=site_url.rstrip("/"))
    expected = code_fences(chapter)
    seen = visit(browser, site_url + page_path(chapter))
    try:
        page = seen.page
        assert page.locator("article button.copy-code").count() == len(expected)
        assert (
            page.locator("article .listing button.copy-code").count()
            == page.locator("article .listing").count()
        )
        assert page.locator("article .listing-output button.copy-code").count() == 0
        clicked = page.evaluate(_CLICK_EVERY_COPY_BUTTON)
        assert len(clicked) == len(expected)
        for index, (button, code) in enumerate(zip(clicked, expected, strict=True)):
            block = f"block {index + 1}"
            assert button["reachable"], f"{block}: its button is covered or off the page"
            assert button["said"] == "Copied", f"{block}: the button said {button['said']!r}"
            assert button["copied"] == code, block
        assert seen.problems == []
    finally:
        seen.page.close()


def test_at_a_laptops_width_the_sections_are_in_view_and_every_output_fits_the_column(
    chapter_page: tuple[ManifestChapter, Visit], site_url: str
) -> None:
    _, seen = chapter_page
    page = seen.page
    # Headings "N.M Title": each is a link in the section list, on screen.
    sections = [
        title.removesuffix("¶").strip()
        for title in page.locator("article section[id^='section-'] > h2").all_inner_texts()
    ]
    assert sections
    shown = page.evaluate(
        """() => [...document.querySelectorAll('.toc-drawer .toc-tree a')]
            .filter(a => {
                const box = a.getBoundingClientRect();
                return box.width > 0 && box.left >= 0 && box.right <= window.innerWidth
                    && getComputedStyle(a).visibility !== 'hidden';
            })
            .map(a => a.textContent.trim())"""
    )
    assert [section for section in sections if section not in shown] == []
    # The way to the whole book on one page, in the sidebar beside the text.
    whole_book = page.locator(".sidebar-drawer a.whole-book-link")
    assert whole_book.is_visible()
    assert whole_book.evaluate("a => a.href") == site_url + "book.html"
    too_wide = page.evaluate(
        """() => {
            const column = document.querySelector('article').getBoundingClientRect();
            return [...document.querySelectorAll('article .listing-output')]
                .filter(o => {
                    const pre = o.querySelector('pre');
                    return pre.scrollWidth > pre.clientWidth
                        || o.getBoundingClientRect().right > column.right + 0.5;
                })
                .map(o => o.querySelector('.caption-text').textContent);
        }"""
    )
    assert too_wide == []
    padding = page.evaluate("getComputedStyle(document.querySelector('#verification')).paddingLeft")
    assert float(padding.removesuffix("px")) >= 8, "the banner's text touches its border"
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1]


# Last of the tests on the shared page: in CI its screenshot resizes the page
# to its whole height for a moment, and no test reads the page after it.
def test_a_chapter_page_loads_without_console_errors(
    chapter_page: tuple[ManifestChapter, Visit],
) -> None:
    chapter, seen = chapter_page
    assert seen.page.locator("h1").first.inner_text().startswith(f"Chapter {chapter.number}")
    keep_screenshot(seen.page, f"{Path(page_path(chapter)).stem}-desktop")
    assert seen.problems == []
