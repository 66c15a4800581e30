"""The real book's site in a real headless Chromium, served on 127.0.0.1: the site as a whole.

The contents page, every internal link, search, the one-page book, the
exercise books' downloads. Each chapter's own page is tested in
test_site_browser_chapters.py (at a desktop's width) and
test_site_browser_phone.py; the three files share one build of the site per
test run (tests/site/real_site.py) and run side by side under pytest-xdist.
Screenshots go to `build/site-screenshots/` when asked for (tests/site/browsing.py says when).
"""

from __future__ import annotations

import io
import zipfile
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from browsing import (
    DESKTOP,
    DRAFTED,
    SCREENSHOTS,
    chapter_report,
    keep_screenshot,
    page_path,
    screenshot,
    visit,
)
from matplotlib.image import imread
from playwright.sync_api import BrowserContext, Page
from real_site import RealSite
from site_building import REPO

from bookproof.site.vocabulary import read_vocabulary
from bookproof.verify.environment import DEFAULT_MANIFEST
from bookproof.verify.manifest import ManifestChapter, load_manifest

pytestmark = pytest.mark.slow  # the site is built from a verification of the whole book


def test_a_saved_screenshot_holds_the_same_pixels_as_playwrights_full_page_one(
    browser: BrowserContext, site_url: str
) -> None:
    seen = visit(browser, site_url + "glossary.html")
    try:
        screenshot(seen.page, "glossary-desktop")
        # Decoded (matplotlib reads PNG) to an array of pixels, height x width x RGBA.
        saved = imread(SCREENSHOTS / "glossary-desktop.png", format="png")
        playwrights = imread(io.BytesIO(seen.page.screenshot(full_page=True)), format="png")
        assert saved.shape == playwrights.shape
        assert saved.shape[0] > DESKTOP["height"], "the glossary no longer runs past one screen"
        assert (saved == playwrights).all(), "the pixels differ"
        assert seen.problems == []
    finally:
        seen.page.close()


def test_the_contents_page_lists_every_chapter_in_order(
    browser: BrowserContext, site_url: str
) -> None:
    seen = visit(browser, site_url + "index.html")
    try:
        keep_screenshot(seen.page, "index-desktop")
        entries = seen.page.locator(".book-contents > li")
        manifest = load_manifest(DEFAULT_MANIFEST).chapters
        assert entries.count() == len(manifest)
        for index, chapter in enumerate(manifest):
            entry = entries.nth(index)
            assert f"Chapter {chapter.number}. {chapter.title}" in entry.inner_text()
            assert entry.locator("a").count() == (1 if chapter.drafted else 0)
        assert seen.problems == []
    finally:
        seen.page.close()


def test_no_internal_link_is_broken(browser: BrowserContext, site_url: str) -> None:
    """Crawl every page reachable from the contents page; every link and anchor must exist."""
    origin = urlparse(site_url).netloc
    anchors: dict[str, set[str]] = {}  # page URL -> ids on it
    links: list[tuple[str, str]] = []  # (page it is on, absolute URL)
    broken: list[str] = []
    queue = [site_url + "index.html"]
    page = browser.new_page()
    try:
        while queue:
            url = queue.pop()
            if url in anchors:
                continue
            # The ids and links are the parsed page's, once its scripts (Furo's,
            # and book.js, deferred) have run: that is DOMContentLoaded. Images
            # and styles are not waited for: this test holds the links, and
            # visit() holds what the pages it opens load.
            response = page.goto(url, wait_until="domcontentloaded")
            if response is None or response.status != 200:
                broken.append(f"{url}: HTTP {response.status if response else '-'}")
                anchors[url] = set()
                continue
            anchors[url] = set(page.eval_on_selector_all("[id]", "els => els.map(e => e.id)"))
            for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                target = urljoin(url, href)
                if urlparse(target).netloc != origin:
                    continue
                links.append((url, target))
                page_url = urldefrag(target).url
                if page_url.endswith(".html") and page_url not in anchors:
                    queue.append(page_url)
        # A file that is not a page (a notebook, a zip, an image) is fetched once,
        # however many pages link to it: the server's answer is the same for each.
        statuses: dict[str, int] = {}
        for source, target in links:
            page_url, fragment = urldefrag(target)
            if not page_url.endswith(".html"):
                if page_url not in statuses:
                    statuses[page_url] = page.request.get(page_url).status
                if statuses[page_url] != 200:
                    broken.append(f"{source} -> {target}: HTTP {statuses[page_url]}")
            elif fragment and fragment not in anchors.get(page_url, set()):
                broken.append(f"{source} -> {target}: no element with id {fragment!r}")
    finally:
        page.close()
    assert broken == []
    crawled = {urlparse(url).path.lstrip("/") for url in anchors}
    assert {page_path(chapter) for chapter in DRAFTED} <= crawled
    assert "glossary.html" in crawled


def test_searching_for_a_term_of_chapter_2_finds_chapter_2(
    browser: BrowserContext, site_url: str
) -> None:
    chapter_2 = next(chapter for chapter in DRAFTED if chapter.number == 2)
    assert chapter_2.text is not None
    term = next(t.term for t in read_vocabulary(chapter_2.text) if t.term.isalpha())
    seen = visit(browser, site_url + "index.html")
    try:
        page = seen.page
        page.fill("form.sidebar-search-container input[name=q]", term)
        page.press("form.sidebar-search-container input[name=q]", "Enter")
        page.wait_for_selector("#search-results ul.search li a")
        found = page.eval_on_selector_all(
            "#search-results ul.search li a", "els => els.map(e => e.getAttribute('href'))"
        )
        assert any(page_path(chapter_2) in href for href in found), (term, found)
        assert seen.problems == []
    finally:
        seen.page.close()


def search_hits(page: Page) -> list[list[str | None]]:
    """Each hit on the search page: its link's href, then its link into book.html (or None)."""
    # Sphinx lists the hits one by one, then says how many it found.
    page.wait_for_function(
        "() => document.querySelector('#search-results .search-summary')"
        "?.textContent.startsWith('Search finished')"
    )
    hits: list[list[str | None]] = page.eval_on_selector_all(
        "#search-results ul.search > li",
        """els => els.map(li => [
            li.querySelector(':scope > a').getAttribute('href'),
            li.querySelector('a.whole-book-hit')?.getAttribute('href') ?? null,
        ])""",
    )
    return hits


def test_a_search_hit_in_a_chapter_also_leads_to_its_place_in_the_one_page_book(
    browser: BrowserContext, site_url: str
) -> None:
    """book.html is not indexed (each hit would come twice); each chapter hit links into it."""
    chapter_2 = next(chapter for chapter in DRAFTED if chapter.number == 2)
    assert chapter_2.text is not None
    chapters = {page_path(chapter): chapter.number for chapter in DRAFTED}
    heading = next(
        line.removeprefix("## ").split(" ", 1)[1]
        for line in chapter_2.text.read_text(encoding="utf-8").splitlines()
        if line.startswith("## 2.1 ")
    )
    seen = visit(browser, site_url + "book.html")
    try:
        page = seen.page
        # Searched from the one-page book, as its reader would: the section's title.
        page.fill("form.sidebar-search-container input[name=q]", heading)
        page.press("form.sidebar-search-container input[name=q]", "Enter")
        hits = search_hits(page)
        assert len({href for href, _ in hits}) == len(hits), "a hit is listed twice"
        for href, whole_book in hits:
            assert href is not None
            chapter_page, _, fragment = href.partition("#")
            number = chapters.get(chapter_page)
            if number is None:  # the glossary, an exercise book: not in book.html
                assert whole_book is None, href
            else:
                expected = f"ch{number}-{fragment}" if fragment else f"ch{number}"
                assert whole_book == f"./book.html#{expected}", href
        assert [page_path(chapter_2) + "#section-2-1", "./book.html#ch2-section-2-1"] in hits
        page.click("#search-results a.whole-book-hit[href='./book.html#ch2-section-2-1']")
        page.wait_for_load_state("load")
        assert page.url == site_url + "book.html#ch2-section-2-1"
        title = page.locator("#ch2 #ch2-section-2-1 > h2").inner_text()
        assert title.removesuffix("¶").strip() == f"2.1 {heading}"
        # A word of the text (not a title): the hit opens chapter 2 in book.html, where it is.
        term = next(t.term for t in read_vocabulary(chapter_2.text) if t.term.isalpha())
        page.goto(site_url + f"search.html?q={term}")
        hits = search_hits(page)
        assert [page_path(chapter_2), "./book.html#ch2"] in hits
        page.click("#search-results a.whole-book-hit[href='./book.html#ch2']")
        page.wait_for_load_state("load")
        assert page.url == site_url + "book.html#ch2"
        assert term.lower() in page.locator("#ch2").inner_text().lower()
        assert seen.problems == []
    finally:
        seen.page.close()


def test_the_one_page_book_holds_every_drafted_chapter_in_order_with_working_links(
    browser: BrowserContext, site_url: str, real_site: RealSite
) -> None:
    seen = visit(browser, site_url + "index.html")
    try:
        page = seen.page
        elsewhere: list[str] = []  # readers may be offline: nothing is fetched from outside
        page.on(
            "request",
            lambda request: (
                elsewhere.append(request.url)
                if urlparse(request.url).netloc != urlparse(site_url).netloc
                else None
            ),
        )
        page.click("article a.whole-book-link")
        page.wait_for_load_state("load")
        assert page.url == site_url + "book.html"
        assert elsewhere == []
        keep_screenshot(page, "book-desktop", full_page=False)  # its top: it is long
        titles = page.locator("article .whole-book-chapter h1").all_inner_texts()
        assert [title.rstrip("¶").strip() for title in titles] == [
            f"Chapter {chapter.number}. {chapter.title}" for chapter in DRAFTED
        ]
        # Every listing the verifier proved, as on the chapter's own page (whose
        # count test_a_chapter_page_shows_each_listing_... holds to the same report).
        for chapter in DRAFTED:
            listings = page.locator(f"#ch{chapter.number} .listing").count()
            assert listings == chapter_report(real_site.report, chapter)["listings"]["total"]
        # One page holds each id once, whichever chapters share a heading.
        twice = page.evaluate(
            """() => {
                const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
                return ids.filter((id, index) => ids.indexOf(id) !== index);
            }"""
        )
        assert twice == []
        # Every link within the page has its target on the page.
        missing = page.evaluate(
            """() => [...document.querySelectorAll('a[href^="#"]')]
                .map(a => a.getAttribute('href').slice(1))
                .filter(id => id && !document.getElementById(decodeURIComponent(id)))"""
        )
        assert missing == []
        # A mention of a section of another chapter leads there, on this page.
        target = page.evaluate(
            """() => [...document.querySelectorAll('.whole-book-chapter a.book-xref')]
                .map(a => [a.closest('.whole-book-chapter').id, a.getAttribute('href')])
                .filter(([chapter, href]) => /^#ch[0-9]+-section-/.test(href)
                    && !href.startsWith('#' + chapter + '-'))
                .map(([, href]) => href)[0]"""
        )
        assert target, "no chapter mentions a section of another"
        page.locator(f"article a.book-xref[href='{target}']").first.click()
        assert page.url.endswith(target)
        # The theme scrolls smoothly: wait until the section's heading is at the top.
        page.wait_for_function(
            """id => {
                const top = document.getElementById(id).getBoundingClientRect().top;
                return top >= 0 && top < window.innerHeight / 2;
            }""",
            arg=target[1:],
            timeout=10_000,
        )
        # Printed, each chapter starts a page and no button is printed.
        page.emulate_media(media="print")
        breaks = page.eval_on_selector_all(
            ".whole-book-chapter", "els => els.map(e => getComputedStyle(e).breakBefore)"
        )
        assert set(breaks) == {"page"}
        assert page.evaluate(
            "[...document.querySelectorAll('button.copy-code, .sidebar-drawer, .toc-drawer')]"
            ".every(b => getComputedStyle(b).display === 'none')"
        )
        assert seen.problems == []
    finally:
        seen.page.close()


BOOKS = [c for c in DRAFTED if c.exercises is not None]


@pytest.mark.parametrize("chapter", BOOKS, ids=[f"book{c.number:02d}" for c in BOOKS])
def test_an_exercise_books_page_serves_its_notebooks_real_files(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    assert chapter.exercises is not None
    folder = chapter.exercises
    readme = (folder / "README.md").relative_to(REPO).with_suffix(".html").as_posix()
    seen = visit(browser, site_url + readme)
    try:
        page = seen.page
        links = page.eval_on_selector_all(
            "article a.download", "els => els.map(e => [e.textContent, e.href])"
        )
        offered = dict(links)
        notebooks = sorted(path.name for path in folder.glob("*.ipynb"))
        assert notebooks, f"{folder} has no notebook"
        assert sorted(name for name in offered if name.endswith(".ipynb")) == notebooks
        for name in notebooks:
            response = page.request.get(offered[name])
            assert response.status == 200
            assert response.body() == (folder / name).read_bytes(), name
        bundle = page.request.get(offered[f"{folder.name}.zip"])
        assert bundle.status == 200
        with zipfile.ZipFile(io.BytesIO(bundle.body())) as archive:
            names = set(archive.namelist())
        assert {f"{folder.name}/{name}" for name in notebooks} <= names
        assert seen.problems == []
    finally:
        seen.page.close()
