"""What the tests of a chapter's files share: where its parts are, syntax trees, the checkpoint.

Where each part of a chapter lives is the layout's to say (`bookproof.layout`):
`parts(N)` asks it, and `chapter_problems` checks that a chapter has every
part, named and wired as the layout expects, for the manifest-driven test and
for a chapter `scripts/new_chapter.py` has just laid out. A chapter's learner
file, checkpoint and runtime module are compared by their top-level
definitions and constants (syntax trees, positions ignored); a checkpoint is
run as a reader runs it, in a subprocess, with only the provider variables a
test means to set.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from committed import EXERCISES_ROOT, as_committed
from markdown_it import MarkdownIt

from bookproof.grade.book import Book, book_of
from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT, BookLayout, ChapterParts, ManifestChapter, default_layout
from bookproof.layout import load_manifest as load
from bookproof.notebooks.sync import Pending, pending

__all__ = [
    "PROVIDER_VARIABLES",
    "chapter_problems",
    "checkpoint_output",
    "constants",
    "definitions",
    "listing_definitions",
    "parts",
    "run_checkpoint",
    "run_python",
    "shown_as_changes",
]

# The sections every chapter ends with, in the book's format (book/FORMAT.md).
CLOSING_SECTIONS = ("Summary", "Exercises", "Recall questions", "Vocabulary")
READER_FILE_PREFIX = "profrod_sovereign_agent_"


def parts(number: int) -> ChapterParts:
    """Where chapter `number`'s parts are in this repository, as the layout says."""
    layout = default_layout()
    chapter = load(layout.manifest).chapter(number)
    assert chapter is not None, f"chapter {number} is not in the manifest"
    return layout.parts(chapter)


def grader_book(layout: BookLayout, number: int) -> Book:
    """The grader's book of chapter `number`: imported as the grader imports it.

    In a scratch copy of the repository the module is loaded from its file (a
    single module: a package's own imports would reach this checkout's).
    """
    if layout.root.resolve() == REPO_ROOT:
        return load_book(number)
    path = layout.grader_book(number)
    name = f"scratch_books.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        return book_of(module)
    finally:
        del sys.modules[name]


@functools.cache
def _committed_pending() -> tuple[Pending, ...]:
    """Every committed notebook not generated from its plan, worked out once a session.

    It regenerates every notebook of every book, most of the time of checking a
    chapter; the committed export is the same for the whole session (no test
    writes in it), so each chapter reads its own from one answer.
    """
    return tuple(pending(EXERCISES_ROOT))


def chapter_problems(layout: BookLayout, chapter: ManifestChapter) -> list[str]:
    """What a drafted chapter lacks, or names other than the layout expects; [] when whole.

    Presence, naming and wiring only: that the checkpoint prints the chapter's
    block, and that its listings and learner file hold, is the verifier's to say.
    """
    found = layout.parts(chapter)
    stem = f"ch{chapter.number:02d}_"
    problems: list[str] = []

    def need(condition: bool, problem: str) -> None:
        if not condition:
            problems.append(f"chapter {chapter.number}: {problem}")

    # The reader's files, under book/textbook/, named after the chapter.
    for part, folder, suffix in (
        (found.text, layout.textbook, ".md"),
        (found.checkpoint, layout.textbook / "checkpoints", "_checkpoint.py"),
        (found.learner, layout.textbook / "learner", "_learner.py"),
    ):
        prefix = stem if suffix == ".md" else READER_FILE_PREFIX + stem
        need(part.is_file(), f"no file {part}")
        need(part.parent == folder, f"{part.name} is not in {folder}")
        need(part.name.startswith(prefix) and part.name.endswith(suffix), f"{part.name}: misnamed")
    if found.text.is_file():
        text = found.text.read_text(encoding="utf-8")
        need(
            text.startswith(f"# Chapter {chapter.number}. {chapter.title}\n"),
            "the text does not open with its manifest title",
        )
        headings = re.findall(r"^## (?:[\d.]+ )?(.+)$", text, re.MULTILINE)
        for section in CLOSING_SECTIONS:
            need(section in headings, f"the text has no {section} section")
        blocks = [
            token
            for token in MarkdownIt("commonmark").parse(text)
            if token.type == "fence" and token.info.strip() == "checkpoint-output"
        ]
        need(len(blocks) == 1, f"the text has {len(blocks)} checkpoint-output blocks, not 1")
        need(found.checkpoint.name in text, "the text does not say how to run its checkpoint")

    # The exercise book and its solutions, each in its bookNN folder.
    need(found.exercises == layout.exercises / found.folder, f"exercises not in {found.folder}")
    need(found.solutions == layout.solutions / found.folder, f"solutions not in {found.folder}")
    for folder in (found.exercises, found.solutions):
        need((folder / "README.md").is_file(), f"no README.md in {folder}")
    plans = [plan.name for plan in found.unit_plans()]
    # Units A and B at least; a book may add units, lettered on without a gap.
    lettered = [f"unit_{letter}.md" for letter in "abcdefgh"[: max(2, len(plans))]]
    need(plans == lettered, f"unit plans are {plans}, not {', '.join(lettered)}")
    # In this checkout, the committed notebooks: a learner's run of them in
    # exercises/ is not the project's. A scratch copy is read as it is.
    here = layout.root.resolve() == REPO_ROOT
    exercises = as_committed(found.exercises) if here else found.exercises
    todo = _committed_pending() if here else tuple(pending(layout.root))
    stale = [item for item in todo if item.notebook.parent == exercises]
    need(stale == [], f"notebooks not generated from their plans: {stale}")

    # The grader's book: declared for this chapter, grading the starter's module.
    if not layout.grader_book(chapter.number).exists():
        need(False, f"no grader book {layout.grader_book(chapter.number)}")
        return problems
    book = grader_book(layout, chapter.number)
    need(book.number == chapter.number, f"the grader's book declares Book({book.number})")
    need(book.folder == found.folder, f"the grader's book grades {book.folder}")
    need(found.starter(book.module).is_file(), f"no starter {book.module}.py")
    need(found.solution(book.module).is_file(), f"no solution {book.module}.py")
    for group in book.groups():
        need((found.solutions / group.file).is_file(), f"no solution test file {group.file}")

    # The site mirrors the repository: the chapter and its exercise book are pages.
    page, readme = found.site_pages(layout.root)
    need(page == f"book/textbook/{found.text.stem}", f"the chapter's page would be {page}")
    need(readme == f"exercises/{found.folder}/README", f"the exercise book's page is {readme}")
    return problems


# Variables a developer's shell may carry; each test sets exactly the ones it means.
PROVIDER_VARIABLES = (
    "SOVEREIGN_MODEL",
    "SOVEREIGN_TRACE",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
)


def definitions(path: Path) -> dict[str, str]:
    """Each top-level function and class of a module, by name, as a syntax tree."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: ast.dump(node, include_attributes=False)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }


def constants(path: Path) -> dict[str, str]:
    """Each top-level assignment of a module but `__all__`, by name, as a syntax tree."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        target.id: ast.dump(node.value, include_attributes=False)
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in ([node.target] if isinstance(node, ast.AnnAssign) else node.targets)
        if isinstance(target, ast.Name) and target.id != "__all__" and node.value is not None
    }


def python_listings(chapter: Path) -> list[tuple[list[str], str]]:
    """The words of each `python` fence's info string, with its content, in order."""
    tokens = MarkdownIt("commonmark").parse(chapter.read_text(encoding="utf-8"))
    return [
        (t.info.split(), t.content)
        for t in tokens
        if t.type == "fence" and t.info.split()[:1] == ["python"]
    ]


def shown_as_changes(chapter: Path) -> set[str]:
    """The definitions a `python changes=NAME` listing shows part of."""
    return {
        word.removeprefix("changes=")
        for words, _ in python_listings(chapter)
        for word in words
        if word.startswith("changes=")
    }


def listing_definitions(chapter: Path) -> dict[str, str]:
    """Every top-level function and class the chapter's whole python listings define.

    A `changes=` listing shows part of a definition and is not Python on its
    own; the verifier composes it and holds the learner file to the result.
    """
    found: dict[str, str] = {}
    for words, content in python_listings(chapter):
        if any(word.startswith("changes=") for word in words):
            continue
        for node in ast.parse(content).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found[node.name] = ast.dump(node, include_attributes=False)
    return found


def checkpoint_output(chapter: Path) -> str:
    """The chapter's one `checkpoint-output` block."""
    tokens = MarkdownIt("commonmark").parse(chapter.read_text(encoding="utf-8"))
    blocks = [t.content for t in tokens if t.type == "fence" and t.info == "checkpoint-output"]
    assert len(blocks) == 1
    return blocks[0]


def run_checkpoint(
    checkpoint: Path, cwd: Path, **variables: str
) -> subprocess.CompletedProcess[str]:
    """Run a checkpoint script from `cwd` with exactly the provider `variables` given."""
    return run_python(str(checkpoint), cwd=cwd, **variables)


def run_python(
    *argv: str, cwd: Path = REPO_ROOT, **variables: str
) -> subprocess.CompletedProcess[str]:
    """The test interpreter run with `argv` from `cwd`, and only the provider `variables` given."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    env.update(variables)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
