"""What the browser tests of the real book's site share: Chromium, a page opened, a screenshot.

Chromium is Debian's (`/usr/bin/chromium`), driven by Playwright through
`executable_path`: no browser is ever downloaded.

Screenshots of every chapter, at a desktop's and a phone's width, are saved
under `build/site-screenshots/` in CI, which keeps that folder as an artifact
for a person to look at: `SITE_SCREENSHOTS=1` (which `.ci/run` sets) or
`CI=true` asks for them. No test looks at those, and a chapter is tens of
thousands of pixels tall: saving them cost most of the browser tests' time,
so a developer's run leaves them out. The one screenshot a test looks at (the
glossary's, held pixel for pixel to Playwright's) is taken in every run.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from typing import Any

from playwright.sync_api import BrowserContext, Page
from site_building import REPO

from bookproof.verify.environment import DEFAULT_MANIFEST
from bookproof.verify.manifest import ManifestChapter, load_manifest

SCREENSHOTS = REPO / "build" / "site-screenshots"
SCREENSHOTS_VARIABLE = "SITE_SCREENSHOTS"
# Asked for as tests/strength.py asks for full strength: by CI, or by name.
SAVE_SCREENSHOTS = os.environ.get(SCREENSHOTS_VARIABLE) == "1" or os.environ.get(
    "CI", ""
).lower() in {"1", "true", "yes"}
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


def keep_screenshot(page: Page, name: str, *, full_page: bool = True) -> None:
    """Save what a person looks at in CI's artifact: the whole page, or its first screen.

    Only when screenshots are asked for (`SAVE_SCREENSHOTS`): no test reads these files.
    """
    if not SAVE_SCREENSHOTS:
        return
    if full_page:
        screenshot(page, name)
    else:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def chapter_report(report: Any, chapter: ManifestChapter) -> Any:
    return next(entry for entry in report["chapters"] if entry["number"] == chapter.number)


CHAPTER_IDS = [f"ch{c.number:02d}" for c in DRAFTED]
