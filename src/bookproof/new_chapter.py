"""`new_chapter.py N "Title"`: lay out a planned chapter's parts, each a skeleton that holds.

A chapter touches about fifteen files in eight folders. This writes every one
of them where `bookproof.layout` says it belongs, from the manifest's entry
for chapter N: the text (opening, a section with a listing and its output,
the checkpoint, Summary, Exercises, Recall questions, Vocabulary, Further
reading), the checkpoint and learner file, the exercise book (README, the
starter, unit plans and the notebooks generated from them), the solutions
(README, the reference solution) and the grader's book module. Each part
already holds: the chapter verifies once it is marked drafted, the site
builds it, the reference scores full marks and the starter no exercise point.
The author then replaces the skeleton's one function with the chapter's code.

The manifest entry keeps `status = "planned"` and gains the paths of the
parts, so making the chapter drafted is a change of one word. Nothing that
exists is ever overwritten: the run refuses before writing anything if one
part is already there, and every file is created exclusively.
"""

from __future__ import annotations

import argparse
import keyword
import os
import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from bookproof.layout import (
    REPO_ROOT,
    BookLayout,
    ChapterParts,
    ManifestError,
    chapter_slug,
    load_manifest,
)
from bookproof.notebooks.build import notebook_json

__all__ = ["NewChapterError", "lay_out", "main"]

# A title becomes a Markdown heading, a TOML string and part of file names:
# one line, printable, no quotes or backslashes that would need escaping.
_TITLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ,:;'()&-]*$")
_MAX_TITLE = 80
_MODULE = re.compile(r"^[a-z][a-z0-9_]*$")
_NAMED_PART = re.compile(r"^\s*(text|checkpoint|learner|exercises|solutions)\s*=", re.M)


class NewChapterError(Exception):
    """Why nothing was written; the message is one line."""


def _check_title(title: str) -> None:
    if len(title) > _MAX_TITLE:
        raise NewChapterError(f"the title is {len(title)} characters; at most {_MAX_TITLE}")
    if not _TITLE.match(title) or "  " in title or title != title.strip():
        raise NewChapterError(
            f"bad title {title!r}: one line of letters, digits, spaces and , : ; ' ( ) & -"
        )


def _check_module(module: str) -> None:
    if not _MODULE.match(module) or keyword.iskeyword(module) or module.startswith("test_"):
        raise NewChapterError(
            f"bad module name {module!r}: a lower-case Python identifier, not a keyword "
            "and not starting with test_"
        )


# --- the skeleton's texts ------------------------------------------------------------

# The one function every part shares: the listing defines it, the learner file
# and checkpoint hold it unchanged, the starter and solution copy it.
_FIRST_STEP = '''\
def first_step() -> str:
    """What this chapter's first listing shows: replace it with the chapter's code."""
    return "Chapter {number} starts here."
'''
_EXERCISE = '''\
def exercise_one(text: str) -> str:
    """Exercise 1: {text!r} in capitals, then an exclamation mark."""
'''


def _text(number: int, title: str, parts: ChapterParts, layout: BookLayout, module: str) -> str:
    first_step = _FIRST_STEP.format(number=number)
    checkpoint = parts.checkpoint.relative_to(layout.root).as_posix()
    learner = parts.learner.relative_to(layout.root).as_posix()
    exercises = parts.exercises.relative_to(layout.root).as_posix()
    return f"""# Chapter {number}. {title}

This is the skeleton of chapter {number}. Open it with the problem Lucy's shop
has, in her words, and say what the reader will have built by the end.

## {number}.1 The first step

Each section shows a short listing that prints something worth reading, with
the output it prints under it; the verifier runs the listings in order and
compares what they print.

```python
{first_step}

print(first_step())
```

```output
Chapter {number} starts here.
```

## {number}.2 Run the checkpoint

The checkpoint gathers the chapter's code in one script. From the root of the
repository:

```bash
uv run python {checkpoint}
```

It prints exactly:

```checkpoint-output
Chapter {number} starts here.
```

The file you saved from this chapter is its learner file; our copy is
`{learner}`.

## {number}.3 Summary

Say in a paragraph what the chapter built, and why it matters for the shop.

## {number}.4 Exercises

Exercise Book {number} (`{exercises}/`) starts from `{exercises}/{module}.py`.

- **Unit A** asks for `exercise_one`.
- **Unit B** asks for tests of it.

## Recall questions

1. What does `first_step` return?

<details>
<summary>Answers</summary>

1. The sentence `Chapter {number} starts here.` (section {number}.1).

</details>

## Vocabulary

- **Skeleton**: the parts of a chapter laid out before it is written, each of
  which already holds.

## Further reading

- `book/FORMAT.md`, the contract between a chapter and the verifier.
"""


def _learner(number: int, title: str) -> str:
    return (
        f'"""Chapter {number} ({title}): the file the chapter asks the reader to save."""\n\n'
        "from __future__ import annotations\n\n\n" + _FIRST_STEP.format(number=number)
    )


def _checkpoint(number: int, title: str) -> str:
    return (
        f'"""Chapter {number} ({title}): the chapter\'s code as one script; offline, it prints\n'
        'exactly the chapter\'s checkpoint-output block."""\n\n'
        "from __future__ import annotations\n\n\n"
        + _FIRST_STEP.format(number=number)
        + '\n\ndef main() -> None:\n    print(first_step())\n\n\nif __name__ == "__main__":\n'
        "    main()\n"
    )


def _module(number: int, title: str, *, solved: bool) -> str:
    body = (
        '    return text.upper() + "!"\n'
        if solved
        else '    raise NotImplementedError("Exercise 1: write exercise_one")\n'
    )
    what = "the reference solution" if solved else "the starter: it runs, and does no exercise"
    return (
        f'"""Exercise Book {number} ({title}): {what}."""\n\n'
        "from __future__ import annotations\n\n\n"
        + _FIRST_STEP.format(number=number)
        + "\n\n"
        + _EXERCISE.format(text="text")
        + body
    )


def _readme(number: int, title: str, module: str, *, solutions: bool) -> str:
    if solutions:
        return textwrap.dedent(
            f"""\
            # Solutions {number}: {title}

            `{module}.py` is the reference solution of Exercise Book {number}: the
            grader gives it full marks. `src/bookproof/grade/books/book{number:02d}.py`
            declares each check with its points and feedback.
            """
        )
    return textwrap.dedent(
        f"""\
        # Exercise Book {number}: {title}

        You hand in one module, `{module}.py`. Start from the copy in this folder:
        it is chapter {number}'s code, and it does none of the exercises yet.

        ## Two units, ninety minutes each

        - `unit_a.md` (notebook `unit_a.ipynb`): **exercise 1**.
        - `unit_b.md` (notebook `unit_b.ipynb`): **its tests**.
        """
    )


def _unit(number: int, title: str, letter: str, module: str) -> str:
    if letter == "a":
        work = textwrap.dedent(
            f"""\
            ## Exercise 1

            Write `exercise_one(text)` in `{module}.py`: the text in capitals, then an
            exclamation mark.

            ```python
            from {module} import first_step

            print(first_step())
            ```

            ```python exercise
            # Try exercise_one on a word of your own.
            ```

            | check | points | what it proves |
            |---|---|---|
            | `ex1_shouts` | 1 | `exercise_one` gives the text in capitals and an exclamation mark |
            """
        )
    else:
        work = textwrap.dedent(
            f"""\
            ## Tests of exercise 1

            Write `test_book{number:02d}_shout.py`, with expected values worked out by hand.

            ```python exercise
            # A test of exercise_one.
            ```
            """
        )
    return (
        f"# Exercise Book {number}, Unit {letter.upper()}: {title}\n\n"
        f'*Ninety minutes. Chapter {number} ("{title}") must be read first.*\n\n'
        f"This notebook is generated from `exercises/book{number:02d}/unit_{letter}.md`.\n\n" + work
    )


def _grader_book(number: int, title: str, module: str) -> str:
    return f'''"""Exercise Book {number}: the checks for a submission's `{module}.py`.

The skeleton's checks: one the chapter's own code already passes, one that
exercise 1 adds. Replace them with the chapter's; expected values are worked
out here, from data this module chooses (`fixtures`), never from the book.
"""

from __future__ import annotations

import random

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Book, Trial
from bookproof.grade.questions import call, expect

__all__ = ["BOOK"]

BOOK = Book(
    {number},
    "Exercise Book {number}: {title.lower()}",
    module="{module}",
    chapter="Chapter {number}",
)

S_FIRST = BOOK.section("{number}.1 The first step")
S_UNIT_A = BOOK.section("{number}.4 Exercises") + " (Exercise Book {number}, Unit A)"


@BOOK.baseline(
    points=1,
    section=S_FIRST,
    asks="first_step gives the chapter's first sentence.",
    hint="first_step must return the sentence the chapter prints.",
)
def ch{number}_first_step(rng: random.Random) -> Trial:
    answer = yield call("first_step")
    return expect(answer == "Chapter {number} starts here.", "first_step gives another sentence.")


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="exercise_one gives the text in capitals, then an exclamation mark.",
    hint="exercise_one(text) must return text.upper() + '!'.",
)
def ex1_shouts(rng: random.Random) -> Trial:
    word = fx.token(rng)
    answer = yield call("exercise_one", word)
    return expect(answer == word.upper() + "!", "exercise_one gives another text.")
'''


# --- laying the parts out ----------------------------------------------------------


def _manifest_keys(layout: BookLayout, parts: ChapterParts) -> str:
    return "".join(f'{key} = "{value}"\n' for key, value in layout.manifest_entry(parts).items())


def _with_paths(raw: str, number: int, keys: str) -> str:
    """The manifest's text with `keys` added at the end of chapter `number`'s entry."""
    lines = raw.splitlines(keepends=True)
    start = next(
        index
        for index, line in enumerate(lines)
        if re.match(rf"^\s*number\s*=\s*{number}\s*(#.*)?$", line)
    )
    end = start + 1
    while end < len(lines) and not lines[end].lstrip().startswith("["):
        end += 1
    # Keys go after the entry's last non-blank line, before the blank line that ends it.
    while end > start and not lines[end - 1].strip():
        end -= 1
    if not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    return "".join(lines[:end]) + keys + "".join(lines[end:])


def lay_out(root: Path, number: int, title: str, module: str | None = None) -> list[Path]:
    """Write every part of chapter `number`; the files written, in order. Refuses before writing."""
    _check_title(title)
    layout = BookLayout(root)
    try:
        manifest = load_manifest(layout.manifest)
    except ManifestError as error:
        raise NewChapterError(str(error)) from None
    chapter = manifest.chapter(number)
    if chapter is None:
        raise NewChapterError(
            f"chapter {number} is not in {layout.manifest}; add it there as planned first"
        )
    if chapter.drafted:
        raise NewChapterError(f"chapter {number} is already drafted: nothing to lay out")
    if chapter.title != title:
        raise NewChapterError(
            f"chapter {number} is titled {chapter.title!r} in the manifest, not {title!r}"
        )
    chosen = module or chapter_slug(title)
    _check_module(chosen)
    parts = layout.planned_parts(number, title)
    # The grader's book may be a module or a package: neither may be there yet.
    package = layout.grader_books / parts.folder
    existing = [path for path in (*parts.paths().values(), package) if path.exists()]
    if existing:
        shown = ", ".join(str(path.relative_to(root)) for path in existing)
        raise NewChapterError(f"chapter {number} already has files: {shown}")
    raw = layout.manifest.read_text(encoding="utf-8")
    if _NAMED_PART.search(_entry(raw, number)):
        raise NewChapterError(f"chapter {number}'s manifest entry already names its files")

    plans = {
        parts.exercises / "unit_a.md": _unit(number, title, "a", chosen),
        parts.exercises / "unit_b.md": _unit(number, title, "b", chosen),
    }
    files: dict[Path, str] = {
        parts.text: _text(number, title, parts, layout, chosen),
        parts.checkpoint: _checkpoint(number, title),
        parts.learner: _learner(number, title),
        parts.exercises / "README.md": _readme(number, title, chosen, solutions=False),
        parts.starter(chosen): _module(number, title, solved=False),
        **plans,
        **{
            plan.with_suffix(".ipynb"): notebook_json(text, source_name=plan.name)
            for plan, text in plans.items()
        },
        parts.solutions / "README.md": _readme(number, title, chosen, solutions=True),
        parts.solution(chosen): _module(number, title, solved=True),
        parts.grader_book: _grader_book(number, title, chosen),
    }
    written: list[Path] = []
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        # "x": created here or not at all, even if something appeared since the check above.
        with path.open("x", encoding="utf-8") as file:
            file.write(text)
        written.append(path)
    _replace(layout.manifest, _with_paths(raw, number, _manifest_keys(layout, parts)))
    return written


def _entry(raw: str, number: int) -> str:
    match = re.search(rf"^\s*number\s*=\s*{number}\s*(#.*)?$(.*?)(?=^\s*\[|\Z)", raw, re.M | re.S)
    return match.group(2) if match else ""


def _replace(path: Path, text: str) -> None:
    """Write `path` anew through a file beside it, so an interruption leaves the old text."""
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="new_chapter",
        description=(
            "Lay out a planned chapter's parts (text, checkpoint, learner file, exercise "
            "book, solutions, grader book) as skeletons that already hold, and name them in "
            "the manifest. Never overwrites a file."
        ),
    )
    parser.add_argument("number", type=int, help="the chapter's number in book.toml")
    parser.add_argument("title", help="the chapter's title, exactly as book.toml has it")
    parser.add_argument(
        "--module",
        help="the module the exercise book hands in (default: the title as a file name)",
    )
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="the repository (default: this checkout)"
    )
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    try:
        written = lay_out(root, args.number, args.title, args.module)
    except NewChapterError as error:
        print(f"new_chapter: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(root)}")
    print(
        f"chapter {args.number} is laid out and still planned; write it, then set "
        f'status = "drafted" in {BookLayout(root).manifest.relative_to(root)} and declare '
        "what its exercises change in tests/book/test_exercise_copies_follow_the_chapters.py "
        "and what its checkpoint promises (FACTS) and its learner file defines "
        "(LEARNER_DEFINES) in tests/book/test_reader_files.py"
    )
    return 0
