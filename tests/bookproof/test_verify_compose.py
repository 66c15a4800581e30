"""Changes shown as changes: a `changes=NAME` listing runs, and is held, as the whole class."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verifying import verify

from bookproof.verify.chapter import Chapter, parse_chapter
from bookproof.verify.compose import compose_chapter

FREEZER = '''\
class Freezer:
    """Holds tubs."""

    def __init__(self, tubs: int) -> None:
        self.tubs = tubs

    def take(self, count: int) -> int:
        self.tubs -= count
        return self.tubs

    def report(self) -> str:
        return f"{self.tubs} tubs"
'''

TAKE_REFUSES = """\
class Freezer:
    def take(self, count: int) -> int:
        if count > self.tubs:
            raise ValueError(f"only {self.tubs} tubs")
        self.tubs -= count
        return self.tubs
"""

# The class chapter 1's learner file must hold: the first listing's, with `take` changed.
COMPOSED = FREEZER.replace(
    "    def take(self, count: int) -> int:\n        self.tubs -= count",
    "    def take(self, count: int) -> int:\n"
    "        if count > self.tubs:\n"
    '            raise ValueError(f"only {self.tubs} tubs")\n'
    "        self.tubs -= count",
)

CHAPTER_1 = f"""\
# Chapter 1. Tubs

```python
{FREEZER}

freezer = Freezer(5)
print(freezer.take(2), freezer.report())
```

```output
3 3 tubs
```

Taking more tubs than the freezer holds is now refused; only `take` changes:

```python changes=Freezer
{TAKE_REFUSES}

freezer = Freezer(5)
print(freezer.take(2), freezer.report())
try:
    freezer.take(9)
except ValueError as error:
    print("refused:", error)
```

```output
3 3 tubs
refused: only 3 tubs
```

```checkpoint-output
ok
```
"""

REPORT_IN_WORDS = """\
class Freezer:
    def report(self) -> str:
        return f"{self.tubs} tubs in the freezer"
"""

CHAPTER_2 = f"""\
# Chapter 2. Words

Chapter 1's freezer, reporting in words:

```python changes=Freezer
{REPORT_IN_WORDS}

print(Freezer(4).report())
```

```output
4 tubs in the freezer
```

```checkpoint-output
ok
```
"""


def write_book(root: Path, chapters: dict[int, tuple[str, str]]) -> Path:
    """A manifest of drafted chapters, each (text, learner source); returns the manifest."""
    textbook = root / "book" / "textbook"
    textbook.mkdir(parents=True)
    entries = []
    for number, (text, learner) in chapters.items():
        (textbook / f"ch{number:02d}.md").write_text(text, encoding="utf-8")
        (textbook / f"c{number}.py").write_text('print("ok")\n', encoding="utf-8")
        (textbook / f"l{number}.py").write_text(learner, encoding="utf-8")
        for folder in (f"exercises/book{number:02d}", f"solutions/book{number:02d}"):
            (root / folder).mkdir(parents=True)
        entries.append(
            f'[[chapters]]\nnumber = {number}\ntitle = "Chapter {number}"\nstatus = "drafted"\n'
            f'text = "ch{number:02d}.md"\ncheckpoint = "c{number}.py"\nlearner = "l{number}.py"\n'
            f'exercises = "exercises/book{number:02d}"\nsolutions = "solutions/book{number:02d}"\n'
        )
    manifest = textbook / "book.toml"
    manifest.write_text('title = "Tubs"\n\n' + "\n".join(entries), encoding="utf-8")
    return manifest


def test_a_composed_change_runs_and_a_learner_file_holding_the_whole_class_passes(
    tmp_path: Path,
) -> None:
    manifest = write_book(tmp_path, {1: (CHAPTER_1, COMPOSED)})
    completed = verify("--textbook", "--manifest", manifest)
    # The output proves both halves ran: the new `take` refused, the old `report` answered.
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "2/2 listings" in completed.stdout


def test_a_learner_file_holding_only_the_old_class_fails(tmp_path: Path) -> None:
    manifest = write_book(tmp_path, {1: (CHAPTER_1, FREEZER)})
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 1
    assert "`Freezer` differs from every listing that defines it" in completed.stdout
    assert "raise ValueError" in completed.stdout  # the diff shows what the change added


def test_a_change_to_a_class_an_earlier_chapter_defined_is_composed_across_chapters(
    tmp_path: Path,
) -> None:
    words = COMPOSED.replace(
        'return f"{self.tubs} tubs"', 'return f"{self.tubs} tubs in the freezer"'
    )
    manifest = write_book(tmp_path, {1: (CHAPTER_1, COMPOSED), 2: (CHAPTER_2, words)})
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_a_change_naming_a_class_never_defined_fails_with_file_and_line(tmp_path: Path) -> None:
    text = CHAPTER_1.replace("```python changes=Freezer", "```python changes=Thawer", 1)
    text = text.replace(TAKE_REFUSES, TAKE_REFUSES.replace("class Freezer", "class Thawer"))
    manifest = write_book(tmp_path, {1: (text, COMPOSED)})
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 2
    line = text.splitlines().index("```python changes=Thawer") + 1
    assert f"ch01.md:{line}: `changes=Thawer`: no earlier listing" in completed.stderr


def compose(text: str, *earlier: str) -> Chapter:
    chapters = [parse_chapter(Path(f"/book/ch0{n}.md"), t) for n, t in enumerate(earlier, 1)]
    chapter = parse_chapter(Path("/book/chapter.md"), text)
    return compose_chapter(chapter, lambda: chapters)


def changed(body: str) -> str:
    return f"```python\n{FREEZER}```\n\n```python changes=Freezer\n{body}```\n"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "class Freezer:\n    def take(self, count: int) -> int\n        return 0\n",
            "the `changes=Freezer` listing is not valid Python at line 18",
        ),
        (
            "class Freezer:\n    def tkae(self, count: int) -> int:\n        return 0\n",
            "line 18: `tkae` is not a method of Freezer (/book/chapter.md:1 defines "
            "__init__, take, report)",
        ),
        (
            "class Freezer:\n    limit = 3\n",
            "line 18: a `changes=Freezer` listing holds only the methods it replaces, "
            "not a Assign statement",
        ),
        (
            "class Freezer(dict):\n    def report(self) -> str:\n        return ''\n",
            "line 17: `class Freezer` is written differently from the definition it changes",
        ),
        (
            "def report() -> str:\n    return ''\n",
            "a `changes=Freezer` listing shows `class Freezer:` (or `def Freezer`) once",
        ),
        (
            "class Freezer:\n    def report(self) -> str:\n        return ''\n\n"
            "    def report(self) -> str:\n        return 'x'\n",
            "line 21: `report` is shown twice",
        ),
    ],
)
def test_a_changes_listing_that_cannot_be_composed_is_a_problem_at_its_line(
    body: str, problem: str
) -> None:
    chapter = compose(changed(body))
    assert len(chapter.problems) == 1
    assert chapter.problems[0].startswith("/book/chapter.md:16: ")
    assert problem in chapter.problems[0]


def test_a_change_to_a_function_without_a_snip_line_is_refused() -> None:
    text = "```python\ndef need() -> int:\n    return 1\n```\n\n```python changes=need\n"
    text += "def need() -> int:\n    return 2\n```\n"
    (problem,) = compose(text).problems
    assert "need is a function (/book/chapter.md:1); show it with a `# ...` line" in problem


def test_the_composed_class_keeps_its_order_and_the_chapter_lines_of_each_method() -> None:
    chapter = compose(changed(TAKE_REFUSES))
    (composition,) = chapter.compositions.values()
    methods = [node for node in composition.definition.body if isinstance(node, ast.FunctionDef)]
    assert [method.name for method in methods] == ["__init__", "take", "report"]
    # __init__ and report are where the first listing put them; take is in the second.
    assert [method.lineno for method in methods] == [5, 18, 12]
    assert composition.methods == ("take",)
    assert ast.unparse(composition.definition) == ast.unparse(ast.parse(COMPOSED).body[0])


def test_changes_compose_on_top_of_earlier_changes() -> None:
    text = changed(TAKE_REFUSES) + f"\n```python changes=Freezer\n{REPORT_IN_WORDS}```\n"
    chapter = compose(text)
    last = chapter.compositions[max(chapter.compositions)]
    source = ast.unparse(last.definition)
    assert "raise ValueError" in source and "tubs in the freezer" in source


def test_a_class_from_an_earlier_chapter_is_placed_on_the_changing_listing_line() -> None:
    earlier = f"```python\n{FREEZER}```\n"
    chapter = compose(f"Some text.\n\n```python changes=Freezer\n{REPORT_IN_WORDS}```\n", earlier)
    (composition,) = chapter.compositions.values()
    assert composition.base_line is None and composition.base_where == "/book/ch01.md:1"
    methods = [node for node in composition.definition.body if isinstance(node, ast.FunctionDef)]
    assert [method.lineno for method in methods] == [4, 4, 5]


def test_a_chapter_without_changes_never_reads_the_earlier_chapters() -> None:
    def earlier() -> list[Chapter]:
        raise AssertionError("read the earlier chapters")

    chapter = parse_chapter(Path("/book/chapter.md"), f"```python\n{FREEZER}```\n")
    assert compose_chapter(chapter, earlier) is chapter


# Parsing only, but on a loaded machine one example can take a while.
@settings(deadline=None)
@given(st.text(max_size=300))
def test_any_changes_listing_is_composed_or_refused_with_a_problem_never_a_crash(
    body: str,
) -> None:
    fence = "`" * 4
    text = f"```python\n{FREEZER}```\n\n{fence}python changes=Freezer\n{body}\n{fence}\n"
    chapter = compose(text)
    composed = list(chapter.compositions.values())
    assert len(composed) + len(chapter.problems) >= 1 or "`" * 4 in body
    for composition in composed:
        compile(composition.module, "chapter.md", "exec")


PLAN = """\
def plan(stock: dict[str, int]) -> list[str]:
    \"\"\"What to order.\"\"\"
    wanted = []
    for flavour, tubs in stock.items():
        if tubs < 3:
            wanted.append(flavour)
    wanted.sort()
    return wanted
"""

PLAN_CHANGE = """\
def plan(stock: dict[str, int]) -> list[str]:
    # ... as before
    for flavour, tubs in stock.items():
        if tubs < 5:
            wanted.append(flavour)
    # ... as before
"""


def test_a_function_shown_with_snip_lines_is_spliced_into_the_earlier_one() -> None:
    text = f"```python\n{PLAN}```\n\n```python changes=plan\n{PLAN_CHANGE}```\n"
    chapter = compose(text)
    assert chapter.problems == ()
    (composition,) = chapter.compositions.values()
    expected = ast.parse(PLAN.replace("tubs < 3", "tubs < 5")).body[0]
    assert ast.dump(composition.definition) == ast.dump(expected)  # positions ignored by default
    # Shown lines keep their own chapter lines; kept ones, the first listing's.
    statements = [n for n in ast.walk(composition.definition) if isinstance(n, ast.stmt)]
    lines = {type(n).__name__ + str(n.lineno) for n in statements}
    assert {"FunctionDef13", "Expr3", "Assign4", "For15", "If16", "Return9"} <= lines
    compile(composition.module, "chapter.md", "exec")


def test_a_spliced_function_runs_and_holds_the_learner_file(tmp_path: Path) -> None:
    chapter = (
        "# Chapter 1. Plans\n\n```python\n" + PLAN + "\n\nprint(plan({'a': 4}))\n```\n\n"
        "```output\n[]\n```\n\nOrder earlier:\n\n```python changes=plan\n"
        + PLAN_CHANGE
        + "\n\nprint(plan({'a': 4}))\n```\n\n```output\n['a']\n```\n\n"
        "```checkpoint-output\nok\n```\n"
    )
    new = PLAN.replace("tubs < 3", "tubs < 5")
    manifest = write_book(tmp_path, {1: (chapter, new)})
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    (tmp_path / "book" / "textbook" / "l1.py").write_text(PLAN, encoding="utf-8")
    completed = verify("--textbook", "--manifest", manifest)
    assert completed.returncode == 1
    assert "`plan` differs from every listing that defines it" in completed.stdout


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            PLAN_CHANGE.replace("    for flavour", "    for kind"),
            "the line after a `# ...` line must be a line of plan",
        ),
        (
            PLAN_CHANGE.replace("def plan(stock: dict[str, int])", "def plan(stock: dict)"),
            "the line before a `# ...` line must be a line of plan",
        ),
        (
            "def plan(stock: dict[str, int]) -> list[str]:\n    # ... as before\n"
            "    # ... and more\n    return wanted\n",
            "a `# ...` line needs a shown line before it",
        ),
    ],
)
def test_a_snip_line_whose_neighbours_are_not_lines_of_the_earlier_definition_is_refused(
    change: str, problem: str
) -> None:
    text = f"```python\n{PLAN}```\n\n```python changes=plan\n{change}```\n"
    (found,) = compose(text).problems
    assert found.startswith("/book/chapter.md:12: ") and problem in found


def test_a_method_change_then_a_snip_change_compose_in_turn() -> None:
    snip = (
        "class Freezer:\n    # ...\n    def report(self) -> str:\n"
        '        return f"{self.tubs} tubs left"\n'
    )
    text = changed(TAKE_REFUSES) + f"\n```python changes=Freezer\n{snip}```\n"
    chapter = compose(text)
    assert chapter.problems == ()
    last = chapter.compositions[max(chapter.compositions)]
    source = ast.unparse(last.definition)
    assert "raise ValueError" in source and "tubs left" in source
    compile(last.module, "chapter.md", "exec")


def test_a_snip_line_may_stand_for_the_line_that_closes_a_bracket() -> None:
    base = "def rows() -> list[int]:\n    found = [\n        1,\n        2,\n    ]\n"
    base += "    return found\n"
    # Alone, the listing leaves its bracket open: the `# ...` line stands for its close.
    change = "def rows() -> list[int]:\n    found = [\n        0,\n        1,\n    # ...\n"
    text = f"```python\n{base}```\n\n```python changes=rows\n{change}```\n"
    chapter = compose(text)
    assert chapter.problems == ()
    (composition,) = chapter.compositions.values()
    assert ast.unparse(composition.definition) == ast.unparse(
        ast.parse(base.replace("[\n", "[\n        0,\n")).body[0]
    )
