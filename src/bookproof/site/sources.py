"""The Sphinx source folder, generated from the book: never edited, always rebuilt.

The chapters and the exercise books' Markdown are copied byte for byte, at
the same paths relative to the repository, so every relative link that works
in the repository works on the site, and every line number Sphinx reports is
the line in the real file. Only navigation is added: the contents page, the
glossary, and at the end of each exercise book's README its downloads (each
notebook, and the whole exercise book as a zip) and a list of its units.
"""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from bookproof.layout import Manifest, ManifestChapter
from bookproof.site.evidence import ChapterEvidence
from bookproof.site.sitedata import (
    ChapterData,
    ExerciseBookData,
    ListingData,
    SiteData,
)
from bookproof.site.vocabulary import Term
from bookproof.verify.figures import find_figures
from bookproof.workspace import WORKSPACE, starter_files

__all__ = ["GLOSSARY", "INDEX", "SourceError", "VersionInfo", "markdown_text", "write_sources"]

INDEX = "index"
GLOSSARY = "glossary"
_README = "README.md"
# The zip's entries are dated, so that building twice gives the same bytes.
_ZIP_STAMP = (2024, 1, 1, 0, 0, 0)
# A file name a `{download}` role can hold as it is.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class SourceError(Exception):
    """A file the manifest names cannot be placed on the site."""


@dataclass(frozen=True)
class VersionInfo:
    """When the verifier proved the book, and at which commit."""

    verified_at: dt.datetime
    commit: str | None
    uncommitted: tuple[str, ...]  # chapter sources, relative to the repository


def _docname(path: Path, repo: Path) -> str:
    try:
        relative = path.resolve().relative_to(repo.resolve())
    except ValueError:
        raise SourceError(f"{path}: outside the repository ({repo}); the site mirrors it") from None
    return relative.with_suffix("").as_posix()


def _copy(source: Path, srcdir: Path, docname: str, suffix: bytes = b"") -> None:
    target = srcdir / f"{docname}.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.write_bytes(source.read_bytes() + suffix)
    except OSError as error:
        raise SourceError(f"{source}: cannot copy into the site's sources: {error}") from None


def _copy_figures(chapter: ManifestChapter, repo: Path, srcdir: Path) -> None:
    """The chapter's figure files, beside its copy, so its image links work as in the repository.

    Only the files the chapter shows are copied; the verifier has already held
    each to what its script draws.
    """
    assert chapter.text is not None
    text = chapter.text.read_text(encoding="utf-8")
    for figure in find_figures(chapter.text, text, chapter.number):
        if not figure.svg.is_file():
            continue
        target = (srcdir / _docname(figure.svg, repo)).with_suffix(".svg")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            target.write_bytes(figure.svg.read_bytes())
        except OSError as error:
            raise SourceError(
                f"{figure.svg}: cannot copy into the site's sources: {error}"
            ) from None


def _heading_of(path: Path) -> str | None:
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1":
            return tokens[index + 1].content.strip() or None
    return None


def markdown_text(text: str) -> str:
    """`text` as Markdown that shows exactly it: every ASCII punctuation mark
    backslash-escaped (so `<script>` is text, never HTML, and `*` no emphasis),
    and line breaks, which would end a heading, as spaces."""
    flat = " ".join(text.split())
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", flat)


def _fence(content: str, info: str) -> str:
    """`content` in a fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{content}{ticks}\n"


def _toctree(entries: Sequence[str], caption: str, *, hidden: bool) -> str:
    options = f":caption: {caption}\n:maxdepth: 1\n" + (":hidden:\n" if hidden else "")
    return _fence(options + "\n" + "".join(f"{entry}\n" for entry in entries), "{toctree}")


def _zip_book(folder: Path, target: Path) -> None:
    """The exercise book's files (what `start_exercises.py` copies) under `folder.name/`."""
    with zipfile.ZipFile(target, "w") as archive:
        for relative in starter_files(folder):
            info = zipfile.ZipInfo(f"{folder.name}/{relative.as_posix()}", date_time=_ZIP_STAMP)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, (folder / relative).read_bytes())


def _downloads(chapter: ManifestChapter, folder: Path, page_folder: Path, notes: list[str]) -> str:
    """The README's Downloads section, with the files it offers placed beside its copy.

    Sphinx's `download` role copies each into the site's `_downloads/`, so a
    reader offline gets the real file from the site itself.
    """
    notebooks = []
    for notebook in sorted(folder.glob("*.ipynb")):
        if not _PLAIN_NAME.fullmatch(notebook.name):
            notes.append(f"{notebook}: a name the site cannot offer as a download; skipped")
            continue
        (page_folder / notebook.name).write_bytes(notebook.read_bytes())
        notebooks.append(notebook.name)
    bundle = f"{folder.name}.zip"
    _zip_book(folder, page_folder / bundle)
    workspace = (WORKSPACE / folder.name).as_posix()
    lines = [
        "## Downloads\n",
        f"A notebook imports the starter files beside it, so keep them in one folder: the "
        f"zip holds the whole exercise book in a folder `{folder.name}/`, the same files "
        f"`uv run python scripts/start_exercises.py {chapter.number}` copies into your "
        f"workspace, `{workspace}/`.\n",
        f"- {{download}}`{bundle} <{bundle}>`: the whole exercise book (notebooks, unit "
        "plans, starter files)",
        *(f"- {{download}}`{name} <{name}>`: a notebook" for name in notebooks),
    ]
    return "\n\n" + "\n".join(lines) + "\n"


def _exercise_book(
    chapter: ManifestChapter, repo: Path, srcdir: Path, notes: list[str]
) -> ExerciseBookData | None:
    folder = chapter.exercises
    if folder is None or not folder.is_dir():
        notes.append(f"chapter {chapter.number}: no exercise book folder at {folder}")
        return None
    base = _docname(folder / _README, repo)
    units = sorted(path for path in folder.glob("*.md") if path.name != _README)
    unit_names = [path.stem for path in units]
    for unit in units:
        _copy(unit, srcdir, _docname(unit, repo))
    page_folder = (srcdir / base).parent
    page_folder.mkdir(parents=True, exist_ok=True)
    navigation = _downloads(chapter, folder, page_folder, notes)
    if units:
        navigation += "\n" + _toctree(unit_names, "Units", hidden=False)
    readme = folder / _README
    if readme.is_file():
        title = _heading_of(readme) or f"Exercise Book {chapter.number}"
        _copy(readme, srcdir, base, navigation.encode("utf-8"))
    else:
        title = f"Exercise Book {chapter.number}"
        notes.append(f"{readme}: exercise book {chapter.number} has no README; its page says so")
        page = (
            f"# {title}\n\nThe exercises for chapter {chapter.number}. This exercise book "
            f"has no README yet.\n{navigation}"
        )
        (srcdir / f"{base}.md").parent.mkdir(parents=True, exist_ok=True)
        (srcdir / f"{base}.md").write_text(page, encoding="utf-8")
    return ExerciseBookData(
        chapter=chapter.number,
        title=title,
        docname=base,
        units=tuple(f"{Path(base).parent.as_posix()}/{name}" for name in unit_names),
    )


def _glossary_page(terms: dict[int, tuple[Term, ...]], chapters: dict[int, ChapterData]) -> str:
    grouped: dict[str, list[tuple[int, Term]]] = {}
    for number, chapter_terms in sorted(terms.items()):
        for term in chapter_terms:
            grouped.setdefault(term.key, []).append((number, term))

    def sort_key(key: str) -> str:
        return re.sub(r"[^\w\s]", "", key).strip()

    entries: list[str] = []
    for key in sorted(grouped, key=sort_key):
        definitions = grouped[key]
        lines = [definitions[0][1].term]
        for position, (number, term) in enumerate(definitions):
            docname = chapters[number].docname
            # A no-break space: "(Chapter" and "3)" never end up on two lines.
            where = f"[Chapter\u00a0{number}]({docname}.md#vocabulary)"
            if position:
                lines.append("")
            lines.append(f"  {term.definition} ({where})")
        entries.append("\n".join(lines))
    body = "\n\n".join(entries) + "\n"
    return (
        "# Glossary\n\n"
        "Every term the chapters define in their Vocabulary sections, in alphabetical "
        "order, with the chapter that defines it.\n\n" + _fence(body, "{glossary}")
    )


def _index_page(site: SiteData) -> str:
    drafted = [c.docname for c in site.chapters if c.docname]
    books = [book.docname for book in site.exercise_books]
    parts = [f"# {markdown_text(site.title)}\n"]
    if site.subtitle:
        parts.append(f"*{markdown_text(site.subtitle)}*\n")
    parts.append(_fence("", "{book-verification}"))
    parts.append("## Chapters\n")
    parts.append(_fence("", "{book-one-page}"))
    parts.append(_fence("", "{book-chapters}"))
    if site.exercise_books:
        parts.append("## Exercise books\n")
        parts.append(
            "Each drafted chapter has an exercise book: two ninety-minute units, a "
            "starter file, and a grader that says what is missing.\n"
        )
        parts.append(
            "".join(
                f"- [{book.title}]({book.docname}.md), for chapter {book.chapter}\n"
                for book in site.exercise_books
            )
        )
    parts.append("## Glossary\n")
    parts.append(
        f"[The glossary]({GLOSSARY}.md) gathers the terms each chapter defines in its "
        "Vocabulary section.\n"
    )
    parts.append(_toctree(drafted, "Chapters", hidden=True))
    if books:
        parts.append(_toctree(books, "Exercise books", hidden=True))
    parts.append(_toctree([GLOSSARY], "Reference", hidden=True))
    return "\n".join(parts)


def write_sources(
    srcdir: Path,
    manifest: Manifest,
    repo: Path,
    *,
    subtitle: str | None,
    evidence: dict[int, ChapterEvidence],
    vocabularies: dict[int, tuple[Term, ...]],
    version: VersionInfo,
    notes: list[str],
) -> SiteData:
    """Write every page Sphinx reads into `srcdir` (which must be empty) and the site data.

    What the site shows but a reader should still hear about (an exercise book
    without its README) is appended to `notes`.
    """
    srcdir.mkdir(parents=True, exist_ok=True)
    chapters: list[ChapterData] = []
    books: list[ExerciseBookData] = []
    for chapter in manifest.chapters:
        if not chapter.drafted or chapter.text is None:
            chapters.append(
                ChapterData(
                    number=chapter.number,
                    title=chapter.title,
                    status="planned",
                    summary=chapter.summary,
                )
            )
            continue
        docname = _docname(chapter.text, repo)
        _copy(chapter.text, srcdir, docname)
        _copy_figures(chapter, repo, srcdir)
        book = _exercise_book(chapter, repo, srcdir, notes)
        if book is not None:
            books.append(book)
        proof = evidence[chapter.number]
        chapters.append(
            ChapterData(
                number=chapter.number,
                title=chapter.title,
                status="drafted",
                summary=chapter.summary,
                docname=docname,
                source=chapter.text.resolve().relative_to(repo.resolve()).as_posix(),
                listings=tuple(
                    ListingData(line=item.line, output_line=item.output_line, mode=item.mode)
                    for item in proof.listings
                ),
                checkpoint=proof.checkpoint,
                learner=proof.learner,
                exercise_book=book.docname if book else None,
                isolation=proof.isolation,
            )
        )
    site = SiteData(
        title=manifest.title or "The book",
        subtitle=subtitle,
        verified_at=version.verified_at,
        commit=version.commit,
        uncommitted=version.uncommitted,
        chapters=tuple(chapters),
        exercise_books=tuple(books),
    )
    by_number = {c.number: c for c in chapters if c.docname}
    (srcdir / f"{GLOSSARY}.md").write_text(
        _glossary_page(vocabularies, by_number), encoding="utf-8"
    )
    (srcdir / f"{INDEX}.md").write_text(_index_page(site), encoding="utf-8")
    site.write(srcdir)
    return site
