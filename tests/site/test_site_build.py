"""scripts/build_site.py on the fixture book: what a built site shows, and what stops a build."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from site_building import (
    CHAPTER_1,
    CHAPTER_2,
    FIXTURE_BOOK,
    build,
    copy_fixture_book,
    manifest_of,
    one,
    page,
    replace_in,
)
from system_components import require_executable
from verifying import verify

from bookproof.workspace import starter_files

pytestmark = pytest.mark.slow  # each build verifies a book and runs Sphinx

CH01_PAGE = "book/textbook/ch01_counting_tubs.html"
CH02_PAGE = "book/textbook/ch02_pricing_tubs.html"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture book, built once with warnings as errors; the html folder."""
    root = copy_fixture_book(tmp_path_factory.mktemp("book"))
    out = tmp_path_factory.mktemp("site")
    completed = build(manifest_of(root), out, "--warnings-as-errors")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return out / "html"


def listings(soup: BeautifulSoup) -> list[str]:
    return [one(node, ".listing-number").get_text() for node in soup.select(".listing")]


def link_to(soup: BeautifulSoup, words: str) -> str:
    anchors = [a for a in soup.select("article a.book-xref") if a.get_text() == words]
    assert anchors, f"no link with the words {words!r}"
    return str(anchors[0]["href"])


def test_each_executed_listing_is_numbered_per_chapter_and_marked_verified(built: Path) -> None:
    soup = page(built, CH01_PAGE)
    assert listings(soup) == ["Listing 1.1", "Listing 1.2", "Listing 1.3"]
    assert [node["id"] for node in soup.select(".listing")] == [
        "listing-1-1",
        "listing-1-2",
        "listing-1-3",
    ]
    badges = [one(node, ".badge-verified").get_text() for node in soup.select(".listing")]
    assert badges == [
        "✓ verified: output matched exactly",
        "✓ verified: prints nothing, as checked",
        "✓ verified: raised KeyError",
    ]
    assert listings(page(built, CH02_PAGE)) == ["Listing 2.1", "Listing 2.2", "Listing 2.3"]


def test_a_raises_listing_is_marked_as_an_expected_failure(built: Path) -> None:
    raising = one(page(built, CH01_PAGE), "#listing-1-3")
    assert "listing-raises" in raising["class"]
    assert one(raising, ".badge-raises").get_text() == "expected failure: raises KeyError"


def test_outputs_are_captioned_as_output_of_their_listing_and_never_highlighted(
    built: Path,
) -> None:
    soup = page(built, CH01_PAGE)
    outputs = soup.select(".listing-output")
    captions = [one(node, ".caption-text").get_text() for node in outputs]
    assert captions[:2] == ["Output of Listing 1.1", "Output of Listing 1.3"]
    assert all(one(node, ".highlight-none") for node in outputs)
    assert one(soup, "#listing-1-1-output pre").get_text() == "6\n"


def test_an_output_keeps_its_blank_first_line(built: Path) -> None:
    assert one(page(built, CH02_PAGE), "#listing-2-3-output pre").get_text() == "\ntotals\n"


def test_a_wildcard_output_says_what_the_dots_stand_for(built: Path) -> None:
    caption = one(page(built, CH02_PAGE), "#listing-2-2-output .code-block-caption")
    assert "… stands for text that varies" in caption.get_text()


def test_a_skipped_block_is_shown_unnumbered_as_not_run(built: Path) -> None:
    shown = page(built, CH01_PAGE).select(".code-shown")
    assert len(shown) == 1
    assert "Shown, not run" in shown[0].get_text()
    assert "class Freezer" in one(shown[0], "pre").get_text()
    assert not shown[0].select(".listing-number")


def test_the_checkpoint_output_is_marked_verified(built: Path) -> None:
    block = one(page(built, CH01_PAGE), ".checkpoint-output")
    assert "Output of the checkpoint script" in block.get_text()
    assert one(block, ".badge-verified")
    assert one(block, "pre").get_text() == "vanilla needs 6\nchocolate needs 0\n"


def test_each_chapter_says_how_many_listings_were_verified_and_when(built: Path) -> None:
    banner = one(page(built, CH01_PAGE), "article #verification")
    assert one(banner, ".verified-count").get_text() == "3"
    assert "3 of 3 listings ran" in banner.get_text()
    assert "The checkpoint's output and the learner file were checked too." in banner.get_text()
    assert one(banner, ".verified-at").get_text().endswith(" UTC")


def test_each_chapter_says_its_code_ran_isolated_when_it_did(built: Path) -> None:
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    for chapter in (CH01_PAGE, CH02_PAGE):
        banner = one(page(built, chapter), "article #verification")
        assert one(banner, ".verified-isolation").get_text() == (
            "Its code ran offline, isolated: in sandboxes with no network and no sight of "
            "the verifier."
        )
    index = one(page(built, "index.html"), ".verification-banner")
    assert "The code of every chapter ran offline, isolated, in sandboxes of its own." in (
        index.get_text()
    )


def test_a_book_verified_without_isolation_says_so_on_every_page(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    report = tmp_path / "report.json"
    verified = verify(
        "--textbook", "--manifest", manifest_of(root), "--isolation", "none", "--json", report
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    completed = build(manifest_of(root), tmp_path / "site", "--report", report)
    assert completed.returncode == 0, completed.stderr
    html = tmp_path / "site" / "html"
    for chapter in (CH01_PAGE, CH02_PAGE):
        banner = one(page(html, chapter), "article #verification")
        assert "ran without isolation (no sandbox was available)" in banner.get_text()
        assert "isolated:" not in banner.get_text()
    index = one(page(html, "index.html"), ".verification-banner")
    assert "2 of the 2 chapters ran without isolation" in index.get_text()


def test_recall_answers_stay_a_collapsed_details_block(built: Path) -> None:
    details = one(page(built, CH01_PAGE), "article details")
    assert one(details, "summary").get_text() == "Answers"
    assert "a freezer holding more than the target needs zero tubs" in details.get_text()


HOSTILE_TITLE = "<script>alert(1)</script> & <b>Lucy</b> *shop* {x}"


def test_the_book_title_is_shown_as_text_whatever_it_holds(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    replace_in(manifest_of(root), 'title = "Fixture shop"', f"title = {json.dumps(HOSTILE_TITLE)}")
    out = tmp_path / "site"
    completed = build(manifest_of(root), out)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    index = page(out / "html", "index.html")
    assert one(index, "article h1").get_text().rstrip("#¶ ") == HOSTILE_TITLE
    assert one(index, "title").get_text().startswith(HOSTILE_TITLE)
    assert one(index, ".sidebar-brand-text").get_text().strip() == HOSTILE_TITLE
    for built_page in (out / "html").rglob("*.html"):
        text = built_page.read_text(encoding="utf-8")
        assert "<script>alert(1)" not in text, built_page
    assert not index.select("article script")


def test_raw_html_in_a_chapter_fails_the_build_naming_file_and_line(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    replace_in(
        root / CHAPTER_2,
        "Chapter 1 counted",
        '<img src=x onerror="alert(1)">\n\nPrices <span onclick="alert(2)">too</span>.\n\n'
        "Chapter 1 counted",
    )
    out = tmp_path / "site"
    completed = build(manifest_of(root), out)
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "only <details> and <summary>, without attributes, may be written as HTML" in (
        completed.stderr
    )
    block_line = (root / CHAPTER_2).read_text(encoding="utf-8").splitlines().index(
        '<img src=x onerror="alert(1)">'
    ) + 1
    chapter = root / CHAPTER_2
    assert (
        f"{chapter}:{block_line}: raw HTML is not allowed here: "
        "'<img src=x onerror=\"alert(1)\">'" in completed.stderr
    )
    assert (
        f"{chapter}:{block_line + 2}: raw HTML is not allowed here: "
        "'<span onclick=\"alert(2)\">'" in completed.stderr
    )
    assert not (out / "html" / "index.html").exists()


def test_mentions_of_chapters_sections_listings_and_exercise_books_are_links(
    built: Path,
) -> None:
    ch01 = page(built, CH01_PAGE)
    assert link_to(ch01, "Chapter 2") == "ch02_pricing_tubs.html"
    assert link_to(ch01, "section 2.1") == "ch02_pricing_tubs.html#section-2-1"
    assert link_to(ch01, "Listing 1.3") == "#listing-1-3"
    assert link_to(ch01, "sections 1.1") == "#section-1-1"
    assert link_to(ch01, "1.2") == "#section-1-2"
    assert link_to(ch01, "Exercise Book 1") == "../../exercises/book01/README.html"
    ch02 = page(built, CH02_PAGE)
    assert link_to(ch02, "Listing 1.1") == "ch01_counting_tubs.html#listing-1-1"
    assert one(ch02, "#section-2-1")


def test_a_markdown_link_with_a_github_heading_anchor_works_on_the_site(built: Path) -> None:
    links = page(built, CH02_PAGE).select("article a.reference")
    [need] = [a for a in links if a.get_text() == "the need"]
    target_page, _, anchor = str(need["href"]).partition("#")
    assert target_page == "ch01_counting_tubs.html"
    assert page(built, "book/textbook/ch01_counting_tubs.html").find(id=anchor) is not None


def test_a_planned_chapter_is_listed_as_planned_and_has_no_page(built: Path) -> None:
    assert link_to(page(built, CH01_PAGE), "chapter 3") == "../../index.html#chapter-3"
    contents = page(built, "index.html")
    entry = one(contents, "#chapter-3")
    assert "planned" in entry["class"]
    assert "Chapter 3. Selling tubs" in entry.get_text()
    assert "Not written yet" in entry.get_text()
    assert not entry.select("a")
    assert not list(built.rglob("*selling*"))
    drafted = one(contents, "#chapter-1")
    assert one(drafted, "a")["href"] == CH01_PAGE
    assert "3 listings verified" in drafted.get_text()


def test_the_exercise_books_and_their_units_are_pages(built: Path) -> None:
    readme = page(built, "exercises/book01/README.html")
    assert one(readme, "h1").get_text().startswith("Exercise Book 1: counting tubs")
    units = readme.select("article .toctree-wrapper a")
    assert [a["href"] for a in units] == ["unit_a.html"]
    unit = page(built, "exercises/book01/unit_a.html")
    # "section 2" in a unit is that unit's own heading "2. ...".
    assert link_to(unit, "section 2") == "#section-2"
    assert link_to(unit, "section 1.1") == "../../book/textbook/ch01_counting_tubs.html#section-1-1"


def test_the_glossary_gathers_every_chapter_vocabulary_with_its_chapter(built: Path) -> None:
    glossary = page(built, "glossary.html")
    terms = [node.get_text().rstrip("¶") for node in glossary.select("dl.glossary dt")]
    assert terms == ["Freezer", "Price list", "Replenishment need"]
    need = one(glossary, "dl.glossary dt#term-Replenishment-need").find_next_sibling("dd")
    assert need is not None
    text = need.get_text(" ", strip=True)
    assert "tubs to order, never negative." in text
    assert "the tubs chapter 1 told us to order." in text
    hrefs = [a["href"] for a in need.select("a")]
    assert "book/textbook/ch01_counting_tubs.html#vocabulary" in hrefs
    assert "book/textbook/ch02_pricing_tubs.html#vocabulary" in hrefs


def test_the_site_has_a_search_page_and_an_index_of_the_chapters(built: Path) -> None:
    assert (built / "search.html").is_file()
    index = (built / "searchindex.js").read_text(encoding="utf-8")
    assert "ch02_pricing_tubs" in index


def test_a_chapter_whose_listing_fails_cannot_be_published(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    replace_in(root / CHAPTER_1, "```output\n6\n```", "```output\n7\n```")
    out = tmp_path / "site"
    completed = build(manifest_of(root), out)
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "the site cannot be published" in completed.stderr
    assert "chapter 1 (Counting tubs) does not hold: 2 of 3 listings passed" in completed.stderr
    assert f"{CHAPTER_1}:" in completed.stderr
    assert not (out / "html" / "index.html").exists()


def test_a_report_whose_listings_moved_since_is_refused_as_stale(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    report = tmp_path / "report.json"
    assert verify("--textbook", "--manifest", manifest_of(root), "--json", report).returncode == 0
    replace_in(root / CHAPTER_2, "## 2.1 The price list\n", "## 2.1 The price list\n\nNew.\n")
    os.utime(root / CHAPTER_2, (0, 0))  # so only the positions can tell
    completed = build(manifest_of(root), tmp_path / "site", "--report", report)
    assert completed.returncode == 2, completed.stderr
    assert "stale: the listings of chapter 2" in completed.stderr


def test_a_report_older_than_a_file_it_vouches_for_is_refused_as_stale(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    report = tmp_path / "report.json"
    assert verify("--textbook", "--manifest", manifest_of(root), "--json", report).returncode == 0
    checkpoint = root / "book/textbook/checkpoints/fixture_ch01_checkpoint.py"
    later = report.stat().st_mtime + 60
    os.utime(checkpoint, (later, later))
    completed = build(manifest_of(root), tmp_path / "site", "--report", report)
    assert completed.returncode == 2, completed.stderr
    assert f"stale: {checkpoint} changed after the report was written" in completed.stderr


def test_a_fresh_report_is_used_as_given(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    report = tmp_path / "report.json"
    assert verify("--textbook", "--manifest", manifest_of(root), "--json", report).returncode == 0
    completed = build(manifest_of(root), tmp_path / "site", "--report", report)
    assert completed.returncode == 0, completed.stderr
    assert "verifying the book first" not in completed.stdout
    assert (tmp_path / "site" / "html" / CH01_PAGE).is_file()


def test_a_report_lacking_a_field_the_site_needs_is_refused_naming_it(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    report = tmp_path / "report.json"
    assert verify("--textbook", "--manifest", manifest_of(root), "--json", report).returncode == 0
    document = json.loads(report.read_text(encoding="utf-8"))
    del document["chapters"][1]["blocks"]
    report.write_text(json.dumps(document), encoding="utf-8")
    completed = build(manifest_of(root), tmp_path / "site", "--report", report)
    assert completed.returncode == 2, completed.stderr
    assert "lacks what the site needs (chapters.1.blocks: Field required)" in completed.stderr


def test_a_report_without_a_drafted_chapter_is_refused(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    report = tmp_path / "report.json"
    assert (
        verify(root / CHAPTER_1, "--manifest", manifest_of(root), "--json", report).returncode == 0
    )
    completed = build(manifest_of(root), tmp_path / "site", "--report", report)
    assert completed.returncode == 2, completed.stderr
    assert "the report has no entry for chapter 2 (Pricing tubs)" in completed.stderr


def test_a_mention_of_a_missing_section_fails_a_build_with_warnings_as_errors(
    tmp_path: Path,
) -> None:
    root = copy_fixture_book(tmp_path)
    replace_in(root / CHAPTER_2, "Chapter 1 counted", "Section 2.9 and chapter 1 counted")
    completed = build(manifest_of(root), tmp_path / "site", "-W")
    assert completed.returncode == 1, completed.stderr
    assert f"{root / CHAPTER_2}:3: WARNING: 'Section 2.9' names no target" in completed.stderr
    assert "chapter 2 has no section 2.9" in completed.stderr


def test_a_malformed_vocabulary_fails_the_build_naming_file_and_line(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    replace_in(root / CHAPTER_2, "- **Price list**: what", "- Price list: what")
    completed = build(manifest_of(root), tmp_path / "site")
    assert completed.returncode == 1, completed.stderr
    assert f"{root / CHAPTER_2}:44: the item does not start with a bold term" in completed.stderr


def test_the_build_never_clears_a_folder_it_did_not_create(tmp_path: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    completed = build(manifest_of(copy_fixture_book(tmp_path)), out)
    assert completed.returncode == 2
    assert "refusing to clear a folder the site builder did not create" in completed.stderr
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_an_exercise_book_without_a_readme_gets_a_page_that_says_so(tmp_path: Path) -> None:
    root = copy_fixture_book(tmp_path)
    (root / "exercises/book02/README.md").unlink()
    completed = build(manifest_of(root), tmp_path / "site", "-W")
    assert completed.returncode == 0, completed.stderr
    assert "note: " in completed.stdout and "exercise book 2 has no README" in completed.stdout
    readme = page(tmp_path / "site" / "html", "exercises/book02/README.html")
    assert "This exercise book has no README yet." in one(readme, "article").get_text()


def test_a_figure_is_shown_numbered_with_its_caption_and_alt_text(built: Path) -> None:
    figure = one(page(built, CH01_PAGE), "figure.book-figure")
    assert figure.get("id") == "figure-1-1"
    image = one(figure, "img")
    assert str(image["src"]).endswith("ch01_stock.svg")
    assert image["alt"] == "Two bars: vanilla, 2 tubs, and chocolate, 7 tubs"
    # A mention in the prose links to it.
    assert link_to(page(built, CH01_PAGE), "Figure 1.1") == "#figure-1-1"
    assert (built / "book/textbook" / str(image["src"])).resolve().is_file()
    caption = one(figure, "figcaption")
    assert one(caption, ".figure-number").get_text() == "Figure 1.1"
    assert " ".join(caption.get_text().split()).startswith(
        "Figure 1.1: The tubs of each flavour, stock in Listing 1.2."
    )
    # The caption line is the figure's caption now, not a paragraph of its own.
    assert not [
        p
        for p in page(built, CH01_PAGE).select("article p")
        if p.get_text().startswith("Figure 1.1:") and p.find_parent("figcaption") is None
    ]


def test_a_changes_listing_is_captioned_with_the_class_and_methods_it_changes(
    tmp_path: Path,
) -> None:
    root = copy_fixture_book(tmp_path)
    textbook = root / "book" / "textbook"
    # Chapter 2 changes the constructor of chapter 1's Freezer, and shows only that.
    replace_in(
        root / CHAPTER_2,
        "```checkpoint-output",
        "Chapter 1's freezer now forgets empty flavours:\n\n"
        "```python changes=Freezer\n"
        "class Freezer:\n"
        "    def __init__(self, tubs: dict[str, int]) -> None:\n"
        "        self.tubs = {flavour: count for flavour, count in tubs.items() if count}\n\n\n"
        'print(Freezer({"vanilla": 2, "mango": 0}).tubs)\n'
        "```\n\n```output\n{'vanilla': 2}\n```\n\n```checkpoint-output",
    )
    learner = textbook / "learner" / "fixture_ch02_learner.py"
    learner.write_text(
        learner.read_text(encoding="utf-8") + "\n\nclass Freezer:\n"
        "    def __init__(self, tubs: dict[str, int]) -> None:\n"
        "        self.tubs = {flavour: count for flavour, count in tubs.items() if count}\n",
        encoding="utf-8",
    )
    out = tmp_path / "site"
    completed = build(manifest_of(root), out, "--warnings-as-errors")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    listing = one(page(out / "html", CH02_PAGE), "#listing-2-4")
    assert "listing-changes" in listing["class"]
    assert one(listing, ".listing-number").get_text() == "Listing 2.4"
    assert one(listing, ".listing-changes-note").get_text() == "(changes Freezer: __init__)"
    assert one(listing, ".badge-changes").get_text() == "run as the whole Freezer"


# --- the whole book on one page ----------------------------------------------------


def test_the_one_page_book_holds_every_drafted_chapter_in_the_manifests_order(
    built: Path,
) -> None:
    soup = page(built, "book.html")
    chapters = soup.select("article section.whole-book-chapter")
    assert [chapter["id"] for chapter in chapters] == ["ch1", "ch2"]
    assert [one(chapter, "h1").get_text().rstrip("¶") for chapter in chapters] == [
        "Chapter 1. Counting tubs",
        "Chapter 2. Pricing tubs",
    ]
    # Each chapter as its own page shows it: its listings, banner and figure.
    assert listings(chapters[0]) == listings(page(built, CH01_PAGE))
    assert listings(chapters[1]) == listings(page(built, CH02_PAGE))
    assert one(chapters[0], "#ch1-verification")
    assert one(chapters[0], "figure.book-figure img")
    contents = [item.get_text() for item in soup.select(".whole-book-contents li")]
    assert contents[2] == "Chapter 3. Selling tubs (planned: no text yet)"
    assert one(page(built, "index.html"), "article a.whole-book-link")["href"] == "book.html"
    # Every page's sidebar leads to it.
    for relative in (CH01_PAGE, CH02_PAGE, "glossary.html", "exercises/book01/README.html"):
        link = one(page(built, relative), ".sidebar-drawer a.whole-book-link")
        assert (built / relative).parent.joinpath(str(link["href"])).resolve() == (
            built / "book.html"
        ).resolve(), relative


def test_every_link_of_the_one_page_book_lands_on_this_page_or_a_real_file(built: Path) -> None:
    soup = page(built, "book.html")
    ids = [str(node["id"]) for node in soup.select("[id]")]
    assert len(ids) == len(set(ids)), "an id twice on one page"
    # A mention of section 2.1 in chapter 1 now leads within the page.
    mention = next(a for a in soup.select("a.book-xref") if a.get_text() == "section 2.1")
    assert mention["href"] == "#ch2-section-2-1"
    for link in soup.select("article a[href], .toc-tree a[href], article img[src]"):
        target = str(link.get("href") or link.get("src"))
        if target.startswith("#"):
            assert target[1:] in ids, f"{target}: no such id on the page"
            continue
        path = target.split("#")[0].split("?")[0]
        assert "://" not in target, target  # the fixture links to nothing outside
        assert (built / path).is_file(), f"{target}: no such file"
        assert not path.startswith("book/textbook/ch"), f"{target}: should stay on the page"


# --- downloads of an exercise book ---------------------------------------------------


def test_an_exercise_book_offers_its_notebooks_and_itself_as_downloads(built: Path) -> None:
    book = FIXTURE_BOOK / "exercises" / "book01"
    soup = page(built, "exercises/book01/README.html")
    links = {
        a.get_text(): built / "exercises" / "book01" / str(a["href"])
        for a in soup.select("a.download")
    }
    assert set(links) == {"book01.zip", "unit_a.ipynb"}
    assert links["unit_a.ipynb"].resolve().read_bytes() == (book / "unit_a.ipynb").read_bytes()
    with zipfile.ZipFile(links["book01.zip"].resolve()) as archive:
        held = {name: archive.read(name) for name in archive.namelist()}
    assert held == {
        f"book01/{relative.as_posix()}": (book / relative).read_bytes()
        for relative in starter_files(book)
    }
    assert "book01/counting.py" in held
