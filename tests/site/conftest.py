"""Fixtures of the browser tests: Chromium, and the real book's site built once and served."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import CHROMIUM_FLAGS
from playwright.sync_api import BrowserContext, sync_playwright
from real_book import RealBookRun
from real_site import RealSite, real_site_build
from system_components import require_executable

from bookproof.site.serve import serving


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_executable("chromium", install="sudo apt-get install chromium")


@pytest.fixture(scope="session")
def real_site(session_folder: Path, real_book: RealBookRun) -> RealSite:
    """The real book's site, built once for the whole run (tests/site/real_site.py says how)."""
    return real_site_build(session_folder, real_book)


@pytest.fixture(scope="module")
def site_url(chromium: str, real_site: RealSite) -> Iterator[str]:
    # `chromium` first: without a browser, skip before verifying and building the book.
    with serving(real_site.html) as url:
        yield url


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """One Chromium and one context for a test file: each test opens its own pages in it."""
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield context
        finally:
            context.close()
