"""The Sphinx extension: the book's fences as numbered, verified listings, and its links.

MyST hands each fence whose info string starts with `python`, `output` or
`checkpoint-output` to a directive of that name (`myst_fence_as_directive`),
with the rest of the info string as the argument and the fence's own line.
The directives read the info string exactly as the verifier does
(`classify_info`), so a block the verifier runs is a numbered listing here,
and one it only shows is shown. Each listing is matched, by line, to what the
verifier proved about it; a listing the report does not know stops the build.

After a page is read, its raw HTML is checked (`bookproof.site.rawhtml`: only
`<details>` and `<summary>`, bare, may pass; anything else stops the build,
naming file and line), its section headings "N.M ..." get stable anchors
(`#section-N-M`), a verification banner goes under the chapter's title, and
mentions such as "chapter 3" or "section 2.8" become links, resolved once
every page has been read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from bookproof.site.onepage import WHOLE_BOOK
from bookproof.site.rawhtml import refuse_raw_html
from bookproof.site.sitedata import ChapterData, ListingData, SiteData, read_site_data
from bookproof.site.xref import Mention, find_mentions
from bookproof.verify.chapter import changes_of, classify_info

__all__ = ["FENCE_DIRECTIVES", "BookReference", "format_time", "isolation_sentence", "setup"]

logger = logging.getLogger(__name__)

_SITE = "bookproof_site"
_TARGETS = "bookproof_targets"  # "section:2.8" -> (docname, anchor)
_COUNTS = "bookproof_listing_counts"  # docname -> listings rendered
_LISTING_COUNTER = "bookproof_listing_counter"  # per document, while it is read
# The fences MyST hands to this extension's directives (`myst_fence_as_directive`).
FENCE_DIRECTIVES = ("python", "output", "checkpoint-output")
# Elements whose text is the site's own wording, never searched for mentions.
_NO_XREF = "no-xref"

_MODE_NOTES = {
    "exact": "output matched exactly",
    "wildcard": "output matched; … stands for text that varies",
    "no-output": "prints nothing, as checked",
}


class BookReference(nodes.Inline, nodes.TextElement):
    """A mention of a chapter, section, listing or exercise book, waiting for its target."""


def format_time(site: SiteData) -> str:
    return site.verified_at.strftime("%Y-%m-%d %H:%M UTC")


def isolation_sentence(isolation: str | None) -> str:
    """How the verifier ran the code, said plainly either way."""
    if isolation == "bwrap":
        return (
            "Its code ran offline, isolated: in sandboxes with no network and no sight of "
            "the verifier."
        )
    return (
        "Its code ran without isolation (no sandbox was available), as the verifier's "
        "user and with the network in reach."
    )


def _site(env: BuildEnvironment) -> SiteData:
    site: SiteData = getattr(env, _SITE)
    return site


def _targets(env: BuildEnvironment) -> dict[str, tuple[str, str]]:
    if not hasattr(env, _TARGETS):
        setattr(env, _TARGETS, {})
    targets: dict[str, tuple[str, str]] = getattr(env, _TARGETS)
    return targets


def _counts(env: BuildEnvironment) -> dict[str, int]:
    if not hasattr(env, _COUNTS):
        setattr(env, _COUNTS, {})
    counts: dict[str, int] = getattr(env, _COUNTS)
    return counts


def _listings_read(env: BuildEnvironment) -> int:
    """How many listings of the page being read have been numbered so far."""
    count = env.temp_data.get(_LISTING_COUNTER)
    return count if isinstance(count, int) else 0


# -- fences -------------------------------------------------------------------


def _code_block(code: str, language: str, source: str, line: int) -> nodes.literal_block:
    block = nodes.literal_block(code, code, language=language)
    block.source, block.line = source, line
    return block


def _captioned(
    block: nodes.literal_block, caption: list[nodes.Node], classes: list[str], ids: list[str]
) -> nodes.container:
    """A code block with a caption, as Sphinx renders `code-block :caption:` (with a permalink)."""
    wrapper = nodes.container(
        "", literal_block=True, classes=["literal-block-wrapper", *classes], ids=ids
    )
    wrapper += nodes.caption("", "", *caption)
    wrapper += block
    return wrapper


def _badge(text: str, kind: str = "verified") -> nodes.inline:
    return nodes.inline("", text, classes=["badge", f"badge-{kind}"])


class _Fence(SphinxDirective):
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    # Empty on purpose: MyST then never reads the first lines of a fence as
    # directive options, so an output starting with ":" or "---" stays output.
    option_spec: ClassVar[dict[str, Callable[[str], Any]]] = {}

    @property
    def info_string(self) -> str:
        """The fence's info string as written, e.g. `python raises=KeyError`."""
        return " ".join([self.name, *self.arguments])

    def body(self) -> str:
        """The fence's content exactly as written.

        MyST's parsed `content` drops a leading blank line, which in an output
        block is part of what the listing printed; `block_text` is the whole
        fence, opening and closing lines included, so the body is between them.
        """
        _opening, _, rest = self.block_text.partition("\n")
        body = rest[: rest.rstrip("\n").rfind("\n") + 1]
        if "\n".join(self.content) not in body:  # not the shape we rely on: be safe
            return "\n".join(self.content)
        return body.removesuffix("\n")

    def block(self, language: str) -> nodes.literal_block:
        source, line = self.get_source_info()
        return _code_block(self.body(), language, source, line)

    @property
    def chapter(self) -> ChapterData | None:
        return _site(self.env).chapter_for(self.env.docname)

    def evidence(self, chapter: ChapterData, field: str) -> tuple[int, ListingData]:
        """The listing the verifier proved at this fence's line, with its 1-based index."""
        for index, listing in enumerate(chapter.listings, 1):
            if getattr(listing, field) == self.lineno:
                return index, listing
        raise ExtensionError(
            f"{self.get_location()}: the verifier's report has no listing at this line "
            f"(chapter {chapter.number}); the report is stale, verify the book again"
        )


def _changed_parts(code: str, name: str) -> str:
    """What a `changes=NAME` listing changes, for its caption: "Dispatcher: attempt"
    for a class's methods, "run_task" for a definition shown with `# ...` lines."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return name  # the verifier has refused such a listing; a stale report is caught elsewhere
    methods = [
        method.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == name
        for method in node.body
        if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    return f"{name}: {', '.join(methods)}" if methods else name


class PythonFence(_Fence):
    """`python`, `python raises=NAME`, `python skip`, and other `python ...` fences."""

    def run(self) -> list[nodes.Node]:
        kind, raises = classify_info(self.info_string)
        chapter = self.chapter
        if chapter is None or kind == "shown":
            return [self.block("python")]
        if kind == "skip":
            caption: list[nodes.Node] = [
                nodes.inline("", "Shown, not run", classes=["listing-label"]),
                nodes.Text(" "),
                _badge("a file to save or a fragment to read", "shown"),
            ]
            return [_captioned(self.block("python"), caption, ["code-shown"], [])]

        index, listing = self.evidence(chapter, "line")
        counter = _listings_read(self.env) + 1
        self.env.temp_data[_LISTING_COUNTER] = counter
        if counter != index:
            raise ExtensionError(
                f"{self.get_location()}: listing {counter} of the page is listing {index} "
                "of the verifier's report; the report is stale, verify the book again"
            )
        label = f"{chapter.number}.{index}"
        anchor = f"listing-{chapter.number}-{index}"
        _targets(self.env)[f"listing:{label}"] = (self.env.docname, anchor)
        caption = [nodes.inline("", f"Listing {label}", classes=["listing-number"])]
        classes = ["listing", "listing-verified"]
        if kind == "raises":
            classes.append("listing-raises")
            caption += [
                nodes.Text(" "),
                _badge(f"expected failure: raises {raises}", "raises"),
                nodes.Text(" "),
                _badge(f"✓ verified: raised {raises}"),
            ]
        else:
            caption += [nodes.Text(" "), _badge(f"✓ verified: {_MODE_NOTES[listing.mode]}")]
        changes = changes_of(self.info_string)
        if changes is not None:
            # The listing shows part of a class; the verifier ran the whole of it.
            classes.append("listing-changes")
            caption[1:1] = [
                nodes.Text(" "),
                nodes.inline(
                    "",
                    f"(changes {_changed_parts(self.body(), changes)})",
                    classes=["listing-changes-note"],
                ),
            ]
            caption += [nodes.Text(" "), _badge(f"run as the whole {changes}", "changes")]
        return [_captioned(self.block("python"), caption, classes, [anchor])]


class OutputFence(_Fence):
    """`output`: what the listing just above printed, styled apart from code to type."""

    def run(self) -> list[nodes.Node]:
        chapter = self.chapter
        if chapter is None:
            return [_captioned(self.block("none"), [nodes.Text("Output")], ["listing-output"], [])]
        index, listing = self.evidence(chapter, "output_line")
        label = f"{chapter.number}.{index}"
        caption: list[nodes.Node] = [nodes.Text(f"Output of Listing {label}")]
        if listing.mode == "wildcard":
            caption += [nodes.Text(" "), _badge("… stands for text that varies", "note")]
        anchor = f"listing-{chapter.number}-{index}-output"
        return [_captioned(self.block("none"), caption, ["listing-output"], [anchor])]


class CheckpointOutputFence(_Fence):
    """`checkpoint-output`: what the chapter's checkpoint script prints, as verified."""

    def run(self) -> list[nodes.Node]:
        chapter = self.chapter
        caption: list[nodes.Node] = [nodes.Text("Output of the checkpoint script")]
        if chapter is not None and chapter.checkpoint == "ok":
            caption += [nodes.Text(" "), _badge("✓ verified: the checkpoint printed exactly this")]
        classes = ["listing-output", "checkpoint-output"]
        return [_captioned(self.block("none"), caption, classes, [])]


# -- the contents page ----------------------------------------------------------


def _doc_link(env: BuildEnvironment, docname: str, text: str) -> addnodes.pending_xref:
    return addnodes.pending_xref(
        "",
        nodes.inline("", text),
        refdomain="std",
        reftype="doc",
        reftarget="/" + docname,
        refexplicit=True,
        refdoc=env.docname,
    )


class BookVerification(SphinxDirective):
    """The contents page's statement of what was verified, and when."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        site = _site(self.env)
        drafted = [c for c in site.chapters if c.status == "drafted"]
        listings = sum(len(c.listings) for c in drafted)
        planned = len(site.chapters) - len(drafted)
        commit = f" at commit {site.commit}" if site.commit else ""
        isolated = sum(1 for c in drafted if c.isolation == "bwrap")
        if isolated == len(drafted):
            how = "The code of every chapter ran offline, isolated, in sandboxes of its own."
        else:
            how = (
                f"{len(drafted) - isolated} of the {len(drafted)} chapters ran without "
                "isolation (no sandbox was available), with the network in reach."
            )
        sentences = [
            f"Every listing in this book was run by the book's verifier, and what it printed "
            f"compared with the page: {listings} listings in {len(drafted)} chapters, all "
            f"holding.",
            how,
            f"Verified {format_time(site)}{commit}.",
        ]
        if planned:
            sentences.append(
                f"The {planned} planned chapters are listed below; they have no pages yet."
            )
        paragraph = nodes.paragraph(
            "",
            "",
            _badge("✓ verified"),
            nodes.Text(" " + " ".join(sentences)),
        )
        return [nodes.container("", paragraph, classes=["verification-banner", _NO_XREF])]


class BookOnePage(SphinxDirective):
    """The contents page's way to the whole book on one page (written after the build)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        link = nodes.reference(
            "", "The whole book on one page", refuri=WHOLE_BOOK, classes=["whole-book-link"]
        )
        paragraph = nodes.paragraph(
            "",
            "",
            link,
            nodes.Text(
                ": every drafted chapter in order, to read straight through, print or save."
            ),
        )
        return [nodes.container("", paragraph, classes=["whole-book", _NO_XREF])]


class BookChapters(SphinxDirective):
    """Every chapter of the manifest, in order: drafted ones linked, planned ones marked."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        entries = nodes.bullet_list(classes=["book-contents", _NO_XREF])
        for chapter in _site(self.env).chapters:
            heading = f"Chapter {chapter.number}. {chapter.title}"
            item = nodes.list_item(
                ids=[f"chapter-{chapter.number}"], classes=["chapter-entry", chapter.status]
            )
            line = nodes.paragraph()
            if chapter.status == "drafted" and chapter.docname:
                line += nodes.strong("", "", _doc_link(self.env, chapter.docname, heading))
                line += nodes.Text(" ")
                line += _badge(f"✓ {len(chapter.listings)} listings verified")
            else:
                line += nodes.strong("", heading)
                line += nodes.Text(" ")
                line += _badge("planned", "planned")
            item += line
            if chapter.summary:
                item += nodes.paragraph("", chapter.summary, classes=["chapter-summary"])
            entries += item
        return [entries]


# -- after a page is read ---------------------------------------------------------


def _number_sections(
    env: BuildEnvironment, docname: str, chapter: ChapterData | None, doctree: nodes.document
) -> None:
    """Give numbered headings stable anchors for links to them.

    In a chapter, "N.M Title" gets `#section-N-M`, for "section N.M" from any
    page. On any page, "N. Title" gets `#section-N`, for "section N" on that page.
    """
    for section in doctree.findall(nodes.section):
        title = section.next_node(nodes.title)
        words = title.astext().split(maxsplit=1) if title else []
        if not words:
            continue
        number = words[0].rstrip(".")
        major, dot, minor = number.partition(".")
        if not dot and major.isdigit():
            anchor = f"section-{major}"
            section["ids"].insert(0, anchor)  # first: the heading's permalink uses it
            _targets(env)[f"page-section:{docname}:{major}"] = (docname, anchor)
            continue
        if chapter is None or not (dot and major.isdigit() and minor.isdigit()):
            continue
        if int(major) != chapter.number:
            logger.warning(
                f"section {number} is in chapter {chapter.number}; its number should "
                f"start with {chapter.number}.",
                location=section,
            )
            continue
        anchor = f"section-{major}-{minor}"
        section["ids"].insert(0, anchor)  # first: the heading's permalink uses it
        _targets(env)[f"section:{major}.{minor}"] = (docname, anchor)


_FIGURE_CAPTION = re.compile(r"Figure (\d+)\.(\d+): ")


def _figure_image(paragraph: nodes.paragraph) -> nodes.image | None:
    """The paragraph's image when it is a book figure: alone, and drawn into `figures/`."""
    children = [
        child
        for child in paragraph.children
        if not (isinstance(child, nodes.Text) and not child.astext().strip())
    ]
    if len(children) != 1 or not isinstance(children[0], nodes.image):
        return None
    image = children[0]
    uri = str(image.get("uri", ""))
    return image if "figures/" in uri and uri.endswith(".svg") else None


def _number_figures(env: BuildEnvironment, chapter: ChapterData, doctree: nodes.document) -> None:
    """Each image paragraph followed by "Figure N.M: ..." becomes one numbered figure.

    The Markdown keeps the number and caption as plain text, so that GitHub
    shows them too; here they become the figure's caption, with an anchor
    (`#figure-N-M`) for links. The verifier has checked the numbering.
    """
    for paragraph in list(doctree.findall(nodes.paragraph)):
        image = _figure_image(paragraph)
        parent = paragraph.parent
        if image is None or parent is None:
            continue
        index = parent.index(paragraph)
        following = parent[index + 1] if index + 1 < len(parent) else None
        if not isinstance(following, nodes.paragraph) or not following.children:
            continue
        first = following[0]
        match = _FIGURE_CAPTION.match(first.astext()) if isinstance(first, nodes.Text) else None
        if match is None:
            continue
        label = f"{match[1]}.{match[2]}"
        anchor = f"figure-{match[1]}-{match[2]}"
        caption = nodes.caption(
            "",
            "",
            nodes.inline("", f"Figure {label}", classes=["figure-number"]),
            nodes.Text(": " + first.astext()[match.end() :]),
            *[child.deepcopy() for child in following.children[1:]],
        )
        figure = nodes.figure("", image.deepcopy(), caption, ids=[anchor], classes=["book-figure"])
        figure.source, figure.line = paragraph.source, paragraph.line
        _targets(env)[f"figure:{label}"] = (env.docname, anchor)
        parent.replace(paragraph, figure)
        parent.remove(following)


def _checked_too(checked: list[str]) -> str:
    if not checked:
        return ""
    verb = "were" if len(checked) > 1 else "was"
    return f" {' and '.join(checked).capitalize()} {verb} checked too."


def _insert_banner(site: SiteData, chapter: ChapterData, doctree: nodes.document) -> None:
    """Under the chapter's title: what the verifier proved about this chapter, and when."""
    section = doctree.next_node(nodes.section)
    if section is None:
        raise ExtensionError(f"chapter {chapter.number} has no title heading")
    total = len(chapter.listings)
    checked = [
        name
        for name, state in (
            ("the checkpoint's output", chapter.checkpoint),
            ("the learner file", chapter.learner),
        )
        if state == "ok"
    ]
    commit = f" at commit {site.commit}" if site.commit else ""
    if chapter.source in site.uncommitted:
        commit += ", with uncommitted changes to this chapter"
    paragraph = nodes.paragraph(
        "",
        "",
        _badge("✓ verified"),
        nodes.Text(" "),
        nodes.inline("", str(total), classes=["verified-count"]),
        nodes.Text(
            f" of {total} listings ran and printed exactly the output shown under them "
            "(or raised the exception they name)." + _checked_too(checked) + " Verified "
        ),
        nodes.inline("", format_time(site), classes=["verified-at"]),
        nodes.Text(f"{commit}. "),
        nodes.inline("", isolation_sentence(chapter.isolation), classes=["verified-isolation"]),
    )
    banner = nodes.container(
        "", paragraph, classes=["verification-banner", _NO_XREF], ids=["verification"]
    )
    title_index = section.first_child_matching_class(nodes.title)
    section.insert(0 if title_index is None else title_index + 1, banner)


_NOT_PROSE = (
    nodes.literal,
    nodes.literal_block,
    nodes.title,
    nodes.caption,
    nodes.reference,
    nodes.raw,
    nodes.comment,
    nodes.term,
    addnodes.pending_xref,
    BookReference,
)


def _in_prose(node: nodes.Element) -> bool:
    current: nodes.Element | None = node
    while current is not None:
        if isinstance(current, _NOT_PROSE) or _NO_XREF in current.get("classes", ()):
            return False
        current = current.parent
    return True


def _runs(children: Iterable[nodes.Node]) -> Iterator[list[nodes.Node]]:
    """The children in runs: consecutive Text nodes together, any other node alone.

    A wrapped line of Markdown is two Text nodes ("section" and "2.8"), so
    mentions are searched in the joined run.
    """
    run: list[nodes.Node] = []
    for child in children:
        if isinstance(child, nodes.Text):
            run.append(child)
            continue
        if run:
            yield run
            run = []
        yield [child]
    if run:
        yield run


def _linked(text: str, mentions: list[Mention]) -> list[nodes.Node]:
    pieces: list[nodes.Node] = []
    position = 0
    for mention in mentions:
        if mention.start > position:
            pieces.append(nodes.Text(text[position : mention.start]))
        words = text[mention.start : mention.end]
        pieces.append(
            BookReference(
                words, words, kind=mention.kind, key=mention.key, malformed=mention.malformed
            )
        )
        position = mention.end
    if position < len(text):
        pieces.append(nodes.Text(text[position:]))
    return pieces


def _mark_mentions(doctree: nodes.document) -> None:
    for element in list(doctree.findall(nodes.TextElement)):
        if not _in_prose(element):
            continue
        rebuilt: list[nodes.Node] = []
        changed = False
        for run in _runs(element.children):
            if not isinstance(run[0], nodes.Text):
                rebuilt.extend(run)
                continue
            text = "".join(str(node) for node in run)
            mentions = find_mentions(text)
            if mentions:
                changed = True
                rebuilt.extend(_linked(text, mentions))
            else:
                rebuilt.extend(run)
        if changed:
            element.clear()
            element.extend(rebuilt)


def _on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    env = app.env
    docname = env.docname
    refuse_raw_html(doctree)
    site = _site(env)
    chapter = site.chapter_for(docname)
    _number_sections(env, docname, chapter, doctree)
    if chapter is not None:
        _number_figures(env, chapter, doctree)
        _insert_banner(site, chapter, doctree)
        _counts(env)[docname] = _listings_read(env)
    _mark_mentions(doctree)


# -- once every page is read ------------------------------------------------------


def _check_listing_counts(app: Sphinx, env: BuildEnvironment) -> None:
    """Each chapter page shows exactly the listings the verifier proved."""
    counts = _counts(env)
    for chapter in _site(env).chapters:
        if chapter.docname is None:
            continue
        shown = counts.get(chapter.docname, 0)
        if shown != len(chapter.listings):
            raise ExtensionError(
                f"chapter {chapter.number} ({chapter.title}): its page shows {shown} "
                f"listings, the verifier proved {len(chapter.listings)}"
            )


def _uri(app: Sphinx, fromdoc: str, todoc: str, anchor: str = "") -> str:
    page = "" if fromdoc == todoc else app.builder.get_relative_uri(fromdoc, todoc)
    return page + (f"#{anchor}" if anchor else "")


def _target(app: Sphinx, docname: str, node: BookReference) -> tuple[str, str] | str:
    """(uri, title) of the mention's target, or the reason it has none."""
    site = _site(app.env)
    kind, key = node["kind"], node["key"]
    if node["malformed"]:
        shape = "N.M" if kind == "listing" else "N"
        return f"a {kind.replace('-', ' ')} is numbered {shape}"
    if kind == "section" and "." not in key:
        local = _targets(app.env).get(f"page-section:{docname}:{key}")
        if local is None:
            return f"this page has no heading numbered {key}."
        return _uri(app, docname, docname, local[1]), f"Section {key}"
    chapter = site.chapter(int(key.split(".")[0]))
    if chapter is None:
        return f"the book has no chapter {key.split('.')[0]}"
    if kind == "chapter":
        if chapter.docname is None:
            uri = _uri(app, docname, app.config.root_doc, f"chapter-{chapter.number}")
            return uri, f"Chapter {chapter.number}, {chapter.title} (planned)"
        if chapter.docname == docname:
            return ""  # a chapter naming itself needs no link
        return _uri(app, docname, chapter.docname), f"Chapter {chapter.number}. {chapter.title}"
    if kind == "exercise-book":
        if chapter.exercise_book is None:
            return f"chapter {chapter.number} has no exercise book"
        return _uri(app, docname, chapter.exercise_book), f"Exercise Book {chapter.number}"
    found = _targets(app.env).get(f"{kind}:{key}")
    if found is None:
        if chapter.docname is None:
            return f"chapter {chapter.number} is planned; it has no {kind} {key} yet"
        return f"chapter {chapter.number} has no {kind} {key}"
    target_doc, anchor = found
    return _uri(app, docname, target_doc, anchor), f"{kind.capitalize()} {key}"


def _resolve_mentions(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(BookReference)):
        words = node.astext()
        target = _target(app, docname, node)
        if isinstance(target, str):
            if target:
                logger.warning(
                    f"{words!r} names no target ({target}); the words stay unlinked",
                    location=node,
                    type="bookproof",
                    subtype="xref",
                )
            node.replace_self(nodes.Text(words))
            continue
        uri, title = target
        node.replace_self(
            nodes.reference(
                "", words, refuri=uri, internal=True, reftitle=title, classes=["book-xref"]
            )
        )


# -- wiring -----------------------------------------------------------------------


def _load_site(app: Sphinx) -> None:
    site = read_site_data(app.srcdir)
    setattr(app.env, _SITE, site)


def _whole_book_on_search_page(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Give the search page each chapter page's number, to link its hits into book.html.

    Searching finds each passage once, on its chapter's page; indexing book.html
    as well would repeat every hit, and a hit on it would open at the top of the
    whole book. So each hit on a chapter also offers the same place in the
    one-page book (`book.js` writes that link; ids there carry `chN-`).
    """
    if pagename != "search":
        return
    site = _site(app.env)
    pages = {
        f"{chapter.docname}.html": chapter.number for chapter in site.chapters if chapter.docname
    }
    # Inline in a <script>: "<" escaped, so no file name can close the element.
    data = json.dumps({"page": WHOLE_BOOK, "chapters": pages}).replace("<", "\\u003c")
    app.add_js_file(None, body=f"window.BOOK_WHOLE_BOOK = {data};")


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    targets = _targets(env)
    for key in [key for key, (doc, _anchor) in targets.items() if doc == docname]:
        del targets[key]
    _counts(env).pop(docname, None)


def _merge(app: Sphinx, env: BuildEnvironment, docnames: set[str], other: BuildEnvironment) -> None:
    _targets(env).update(
        {key: value for key, value in _targets(other).items() if value[0] in docnames}
    )
    _counts(env).update({key: value for key, value in _counts(other).items() if key in docnames})


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("python", PythonFence)
    app.add_directive("output", OutputFence)
    app.add_directive("checkpoint-output", CheckpointOutputFence)
    app.add_directive("book-verification", BookVerification)
    app.add_directive("book-chapters", BookChapters)
    app.add_directive("book-one-page", BookOnePage)
    app.add_node(BookReference)
    app.connect("builder-inited", _load_site)
    app.connect("doctree-read", _on_doctree_read)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check_listing_counts)
    app.connect("doctree-resolved", _resolve_mentions)
    app.connect("html-page-context", _whole_book_on_search_page)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
