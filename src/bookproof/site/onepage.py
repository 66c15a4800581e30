"""The whole book on one page (`book.html`), to read straight through, print or save.

Made from the chapter pages Sphinx has just written, in the manifest's order,
so it shows exactly what they show (banners, numbered listings, figures), and
a chapter added to the manifest appears here with nothing else to change.

A page holds each id once, but chapters share many (every chapter has a
`#vocabulary`), so every id of chapter N gets the prefix `chN-`, and every
link is rewritten to match: a link to a chapter, or into one, becomes a link
within this page (`#ch3-section-3-2`); a link to any other page (an exercise
book, the glossary, a figure's image, a download) keeps its target, re-rooted
at this page's folder. The page around the chapters is the contents page's,
so the theme, the navigation and the search stay as everywhere else.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import urljoin, urlsplit

from bs4 import BeautifulSoup, Tag

from bookproof.site.sitedata import SiteData

__all__ = ["WHOLE_BOOK", "OnePageError", "link_in_whole_book", "write_whole_book"]

WHOLE_BOOK = "book.html"
# A made-up origin to resolve relative links against: what shares it is the site.
_ORIGIN = "https://site.invalid/"
_LINKING = ("href", "src")
_NAMING = ("aria-labelledby", "aria-describedby")


class OnePageError(Exception):
    """A built page is not shaped as the theme writes it; the one-page book was not made."""


def _read(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _main(soup: BeautifulSoup, path: Path) -> Tag:
    article = soup.select_one("article[role=main]")
    if article is None:
        raise OnePageError(f"{path}: no <article role=main> in the built page")
    return article


def _chapter_anchor(number: int, fragment: str = "") -> str:
    return f"ch{number}-{fragment}" if fragment else f"ch{number}"


class _Rewriter:
    """Links and ids of one chapter page, as they must read inside book.html."""

    def __init__(self, page: str, number: int, chapters: dict[str, int]) -> None:
        self.base = urljoin(_ORIGIN, page)
        self.number = number
        self.chapters = chapters  # page path from the site's root -> chapter number

    def link(self, value: str) -> str:
        try:
            target = urlsplit(urljoin(self.base, value))
        except ValueError:
            return value  # not a URL (an unclosed "[" of an IPv6 host): left as written
        if f"{target.scheme}://{target.netloc}/" != _ORIGIN:
            return value  # another site, or mailto: and the like
        path = target.path.lstrip("/")
        number = self.chapters.get(path)
        if number is not None:
            return "#" + _chapter_anchor(number, target.fragment)
        rebuilt = path or "index.html"
        if target.query:
            rebuilt += "?" + target.query
        if target.fragment:
            rebuilt += "#" + target.fragment
        return rebuilt

    def apply(self, element: Tag) -> None:
        for node in [element, *element.find_all(True)]:
            if node.get("id"):
                node["id"] = _chapter_anchor(self.number, str(node["id"]))
            for name in _NAMING:
                if node.get(name):
                    node[name] = " ".join(
                        _chapter_anchor(self.number, part) for part in str(node[name]).split()
                    )
            for name in _LINKING:
                value = node.get(name)
                if isinstance(value, str):
                    node[name] = self.link(value)


def link_in_whole_book(page: str, number: int, chapters: dict[str, int], href: str) -> str:
    """What `href`, on chapter `number`'s page `page`, becomes in book.html."""
    return _Rewriter(page, number, chapters).link(href)


def _contents(soup: BeautifulSoup, site: SiteData) -> Tag:
    listing = soup.new_tag("ul", attrs={"class": "whole-book-contents"})
    for chapter in site.chapters:
        item = soup.new_tag("li")
        words = f"Chapter {chapter.number}. {chapter.title}"
        if chapter.docname:
            link = soup.new_tag("a", href="#" + _chapter_anchor(chapter.number))
            link.string = words
            item.append(link)
        else:
            item["class"] = "planned"
            item.string = f"{words} (planned: no text yet)"
        listing.append(item)
    return listing


def _introduction(soup: BeautifulSoup, site: SiteData) -> list[Tag]:
    heading = soup.new_tag("h1")
    heading.string = site.title
    drafted = sum(1 for chapter in site.chapters if chapter.docname)
    paragraph = soup.new_tag("p")
    paragraph.string = (
        f"The book's {drafted} drafted chapters on one page, in order, to read straight "
        "through, print, or save as a PDF (your browser's Print, then Save as PDF): each "
        "chapter starts a new printed page. Each chapter here is its page as verified, "
        "banner and listings included."
    )
    return [heading, paragraph, _contents(soup, site)]


def write_whole_book(html_root: Path, site: SiteData) -> Path:
    """Write `book.html` beside the contents page from the built chapter pages; returns it."""
    index_path = html_root / "index.html"
    page = _read(index_path)
    article = _main(page, index_path)
    drafted = [chapter for chapter in site.chapters if chapter.docname]
    chapters = {f"{chapter.docname}.html": chapter.number for chapter in drafted}
    whole = page.new_tag("section", id="whole-book")
    whole.extend(_introduction(page, site))
    # The theme hides the first entry of "On this page" (the page's own title)
    # and shows what it holds: the chapters, each with its sections.
    title_entry = page.new_tag("li")
    title_link = page.new_tag("a", attrs={"class": "reference internal", "href": "#whole-book"})
    title_link.string = site.title
    sections = page.new_tag("ul")
    title_entry.extend([title_link, sections])
    for chapter in drafted:
        relative = f"{chapter.docname}.html"
        path = html_root / PurePosixPath(relative)
        chapter_page = _read(path)
        rewriter = _Rewriter(relative, chapter.number, chapters)
        body = _main(chapter_page, path)
        wrapper = page.new_tag("section", attrs={"class": "whole-book-chapter"})
        for child in list(body.children):
            wrapper.append(child.extract())
        rewriter.apply(wrapper)
        wrapper["id"] = _chapter_anchor(chapter.number)  # after apply(): not prefixed again
        whole.append(wrapper)
        toc = chapter_page.select_one(".toc-tree > ul > li")
        if toc is not None:
            for deeper in toc.select(":scope > ul > li > ul"):
                deeper.decompose()  # chapters and their sections; the rest is in the text
            rewriter.apply(toc)
            sections.append(toc.extract())
    article.clear()
    article.append(whole)
    tree = page.select_one(".toc-tree")
    if tree is not None:
        outline = page.new_tag("ul")
        outline.append(title_entry)
        tree.clear()
        tree.append(outline)
    for stale in page.select(".related-pages"):
        stale.decompose()  # "next: chapter 1" means nothing on a page that holds them all
    if page.title is not None:
        page.title.string = f"The whole book: {site.title}"
    target = html_root / WHOLE_BOOK
    target.write_text(str(page), encoding="utf-8")
    return target
