"""Each chapter's page of the real book's site in a real headless Chromium, at a phone's width.

Each chapter is saved as a screenshot at 375 px under `build/site-screenshots/`
when asked for (tests/site/browsing.py says when).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browsing import CHAPTER_IDS, DRAFTED, PHONE, keep_screenshot, page_path, visit
from playwright.sync_api import BrowserContext

from bookproof.verify.manifest import ManifestChapter

pytestmark = pytest.mark.slow  # the site is built from a verification of the whole book


@pytest.mark.parametrize("chapter", DRAFTED, ids=CHAPTER_IDS)
def test_a_chapter_page_is_readable_at_a_phone_width(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    seen = visit(browser, site_url + page_path(chapter), PHONE)
    try:
        page = seen.page
        keep_screenshot(page, f"{Path(page_path(chapter)).stem}-phone")
        widths = page.evaluate(
            """() => [document.documentElement.scrollWidth, window.innerWidth]"""
        )
        assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"
        # Text, tables and captions stay inside the screen; only code scrolls
        # sideways, inside its own box.
        overflowing = page.evaluate(
            """() => [...document.querySelectorAll(
                    'article p, article li, article h1, article h2, article h3, article dt,'
                    + ' article dd, article table, article .code-block-caption,'
                    + ' article .literal-block-wrapper')]
                .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
                .map(e => e.tagName + ': ' + e.textContent.slice(0, 60))"""
        )
        assert overflowing == []
        font = page.evaluate("getComputedStyle(document.querySelector('article p')).fontSize")
        assert float(font.removesuffix("px")) >= 14
    finally:
        page.close()
