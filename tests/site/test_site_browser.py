"""The real book's site in a real headless Chromium, served on 127.0.0.1.

Chromium is Debian's (`/usr/bin/chromium`), driven by Playwright through
`executable_path`: no browser is ever downloaded. Each chapter is saved as a
screenshot, at a desktop's and at a phone's width, under
`build/site-screenshots/` (CI keeps that folder as an artifact).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from playwright.sync_api import BrowserContext, Page, sync_playwright
from site_building import REPO, build
from system_components import require_executable

from bookproof.site.serve import serving
from bookproof.site.vocabulary import read_vocabulary
from bookproof.verify.environment import DEFAULT_MANIFEST
from bookproof.verify.manifest import ManifestChapter, load_manifest

pytestmark = pytest.mark.slow  # each build verifies a book and runs Sphinx

SCREENSHOTS = REPO / "build" / "site-screenshots"
DESKTOP = {"width": 1280, "height": 900}
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
def built_book(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The real book's site, built (and verified) once for this module; html folder, report."""
    out = tmp_path_factory.mktemp("book-site")
    completed = build(DEFAULT_MANIFEST, out)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = json.loads((out / "verify-report.json").read_text(encoding="utf-8"))
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


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


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
            response = page.goto(url, wait_until="load")
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
