"""The real book's site in a real headless Chromium, served on 127.0.0.1.

Chromium is Debian's (`/usr/bin/chromium`), driven by Playwright through
`executable_path`: no browser is ever downloaded. Each chapter is saved as a
screenshot, at a desktop's (1,280 px) and at a phone's width, under
`build/site-screenshots/` (CI keeps that folder as an artifact).
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from markdown_it import MarkdownIt
from matplotlib.image import imread
from playwright.sync_api import BrowserContext, Page, sync_playwright
from real_book import RealBookRun
from site_building import REPO, build
from system_components import require_executable

from bookproof.site.serve import serving
from bookproof.site.vocabulary import read_vocabulary
from bookproof.verify.environment import DEFAULT_MANIFEST
from bookproof.verify.manifest import ManifestChapter, load_manifest

pytestmark = pytest.mark.slow  # each build verifies a book and runs Sphinx

SCREENSHOTS = REPO / "build" / "site-screenshots"
DESKTOP = {"width": 1280, "height": 900}
LAPTOP = DESKTOP  # the width readers of a laptop have: 1,280 px
PHONE = {"width": 375, "height": 812}
# What works for a headless Chromium run as root in a container, without a
# GPU, a network beyond 127.0.0.1, or any state kept between runs.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

DRAFTED = [c for c in load_manifest(DEFAULT_MANIFEST).chapters if c.drafted]


def page_path(chapter: ManifestChapter) -> str:
    assert chapter.text is not None
    return chapter.text.relative_to(REPO).with_suffix(".html").as_posix()


@dataclass
class Visit:
    """A page opened in the browser, and everything that went wrong while it loaded."""

    page: Page
    problems: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_executable("chromium", install="sudo apt-get install chromium")


@pytest.fixture(scope="module")
def built_book(
    chromium: str, tmp_path_factory: pytest.TempPathFactory, real_book: RealBookRun
) -> tuple[Path, Any]:
    """The real book's site, built once for this module; html folder, report.

    Built from the session's fresh verification of the book (tests/real_book.py),
    as `build_site.py --report` builds it: the builder refuses a report older than
    any file it vouches for, or one in which a chapter does not hold. A build that
    verifies the book itself is tested on the fixture book (test_site_build.py).
    """
    out = tmp_path_factory.mktemp("book-site")
    completed = build(DEFAULT_MANIFEST, out, "--report", real_book.report)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "verifying the book first" not in completed.stdout
    report = json.loads(real_book.report.read_text(encoding="utf-8"))
    return out / "html", report


@pytest.fixture(scope="module")
def site_url(built_book: tuple[Path, Any]) -> Iterator[str]:
    with serving(built_book[0]) as url:
        yield url


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield context
        finally:
            context.close()


def visit(browser: BrowserContext, url: str, viewport: dict[str, int] = DESKTOP) -> Visit:
    page = browser.new_page()
    page.set_viewport_size(viewport)  # type: ignore[arg-type]
    seen = Visit(page)
    page.on(
        "console",
        lambda message: (
            seen.problems.append(f"console error: {message.text}")
            if message.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda error: seen.problems.append(f"page error: {error}"))
    page.on(
        "requestfailed",
        lambda request: seen.problems.append(f"request failed: {request.url} {request.failure}"),
    )
    page.on(
        "response",
        lambda response: (
            seen.problems.append(f"HTTP {response.status}: {response.url}")
            if response.status >= 400
            else None
        ),
    )
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url}: {response}"
    return seen


# The whole page's size, measured as Playwright measures it for `full_page=True`.
_FULL_PAGE_SIZE = """() => {
    const [body, root] = [document.body, document.documentElement];
    return [
        Math.max(body.scrollWidth, root.scrollWidth, body.offsetWidth, root.offsetWidth,
                 body.clientWidth, root.clientWidth),
        Math.max(body.scrollHeight, root.scrollHeight, body.offsetHeight, root.offsetHeight,
                 body.clientHeight, root.clientHeight),
    ];
}"""


def screenshot(page: Page, name: str) -> None:
    """Save the whole page as a PNG, pixel for pixel what `page.screenshot(full_page=True)` saves.

    Asked of Chromium directly, with its fast PNG encoder (`optimizeForSpeed`):
    a chapter is tens of thousands of pixels tall, and Playwright's default
    encoder took twice as long for the same pixels (a larger file, still lossless).
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("document.fonts.ready.then(() => true)")  # as Playwright waits for them
    width, height = page.evaluate(_FULL_PAGE_SIZE)
    session = page.context.new_cdp_session(page)
    try:
        shot = session.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
                "optimizeForSpeed": True,
            },
        )
    finally:
        session.detach()
    (SCREENSHOTS / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))


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


def chapter_report(report: Any, chapter: ManifestChapter) -> Any:
    return next(entry for entry in report["chapters"] if entry["number"] == chapter.number)


ids = [f"ch{c.number:02d}" for c in DRAFTED]


@pytest.mark.parametrize("chapter", DRAFTED, ids=ids)
def test_a_chapter_page_loads_without_console_errors(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    seen = visit(browser, site_url + page_path(chapter))
    try:
        assert seen.page.locator("h1").first.inner_text().startswith(f"Chapter {chapter.number}")
        screenshot(seen.page, f"{Path(page_path(chapter)).stem}-desktop")
        assert seen.problems == []
    finally:
        seen.page.close()


@pytest.mark.parametrize("chapter", DRAFTED, ids=ids)
def test_a_chapter_page_shows_each_listing_the_verifier_proved_and_marks_it_verified(
    browser: BrowserContext, site_url: str, built_book: tuple[Path, Any], chapter: ManifestChapter
) -> None:
    proved = chapter_report(built_book[1], chapter)["listings"]
    seen = visit(browser, site_url + page_path(chapter))
    try:
        page = seen.page
        assert page.locator("article .listing").count() == proved["total"]
        assert page.locator("article .listing .badge-verified").count() == proved["passed"]
        banner = page.locator("article #verification")
        assert banner.locator(".verified-count").inner_text() == str(proved["total"])
        numbers = page.locator("article .listing .listing-number").all_inner_texts()
        assert numbers == [f"Listing {chapter.number}.{k}" for k in range(1, len(numbers) + 1)]
    finally:
        page.close()


@pytest.mark.parametrize("chapter", DRAFTED, ids=ids)
def test_a_chapter_page_is_readable_at_a_phone_width(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    seen = visit(browser, site_url + page_path(chapter), PHONE)
    try:
        page = seen.page
        screenshot(page, f"{Path(page_path(chapter)).stem}-phone")
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


def test_the_contents_page_lists_every_chapter_in_order(
    browser: BrowserContext, site_url: str
) -> None:
    seen = visit(browser, site_url + "index.html")
    try:
        screenshot(seen.page, "index-desktop")
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
        for source, target in links:
            page_url, fragment = urldefrag(target)
            if not page_url.endswith(".html"):
                status = page.request.get(page_url).status
                if status != 200:
                    broken.append(f"{source} -> {target}: HTTP {status}")
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


@pytest.mark.parametrize("chapter", DRAFTED, ids=ids)
def test_every_block_of_code_has_a_copy_button_that_copies_exactly_its_code(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=site_url.rstrip("/"))
    expected = code_fences(chapter)
    seen = visit(browser, site_url + page_path(chapter))
    try:
        page = seen.page
        buttons = page.locator("article button.copy-code")
        assert buttons.count() == len(expected)
        assert (
            page.locator("article .listing button.copy-code").count()
            == page.locator("article .listing").count()
        )
        assert page.locator("article .listing-output button.copy-code").count() == 0
        for index, code in enumerate(expected):
            button = buttons.nth(index)
            button.scroll_into_view_if_needed()
            button.click()
            page.wait_for_function("b => b.textContent === 'Copied'", arg=button.element_handle())
            assert page.evaluate("navigator.clipboard.readText()") == code, f"block {index + 1}"
        assert seen.problems == []
    finally:
        seen.page.close()


@pytest.mark.parametrize("chapter", DRAFTED, ids=ids)
def test_at_a_laptops_width_the_sections_are_in_view_and_every_output_fits_the_column(
    browser: BrowserContext, site_url: str, chapter: ManifestChapter
) -> None:
    seen = visit(browser, site_url + page_path(chapter), LAPTOP)
    try:
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
        padding = page.evaluate(
            "getComputedStyle(document.querySelector('#verification')).paddingLeft"
        )
        assert float(padding.removesuffix("px")) >= 8, "the banner's text touches its border"
        widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1]
    finally:
        page.close()


def test_the_one_page_book_holds_every_drafted_chapter_in_order_with_working_links(
    browser: BrowserContext, site_url: str, built_book: tuple[Path, Any]
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
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "book-desktop.png"))  # its top: it is long
        titles = page.locator("article .whole-book-chapter h1").all_inner_texts()
        assert [title.rstrip("¶").strip() for title in titles] == [
            f"Chapter {chapter.number}. {chapter.title}" for chapter in DRAFTED
        ]
        # Every listing the verifier proved, as on the chapter's own page (whose
        # count test_a_chapter_page_shows_each_listing_... holds to the same report).
        for chapter in DRAFTED:
            listings = page.locator(f"#ch{chapter.number} .listing").count()
            assert listings == chapter_report(built_book[1], chapter)["listings"]["total"]
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
