"""Declaring an exercise book: each check once, its record and its trial in one place.

A `Book` collects checks as its module is imported. A check is declared by
decorating its trial, so its id (the function's name), points, kind, section,
what it asks, what to do when it fails, and how it is judged sit together:

- `@book.baseline(...)`: a behaviour the chapter's own code already has; the
  untouched starter earns these points, and the report shows them apart.
- `@book.exercise(n, ...)`: a behaviour exercise `n` adds. The untouched
  starter must earn none of these points. A check that guards against an
  over-eager answer (say, "calls that were not refused still run") holds in the
  starter too: give it `requires=` the check of the work itself, and it earns
  its points only once that one passes.
- `book.learner_tests(...)`: where an exercise's behaviour already holds in the
  chapter's code (adding mango is a data change), the learner's deliverable is
  tests. `@tests.catches(...)` declares one faulty version of the reference
  solution; the check passes when the learner's tests pass against the
  reference and fail against that version. `tests.catches_all(...)` declares
  one check over several faulty versions, which passes when the tests catch
  every one of them.

The package docstring (`bookproof.grade`) walks through a whole example.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from bookproof.grade.questions import Asks
from bookproof.layout import BookLayout

__all__ = [
    "BASELINE",
    "EXERCISE",
    "JSON",
    "VISIBILITIES",
    "Book",
    "BookError",
    "Check",
    "FaultyVersion",
    "Kind",
    "LearnerTests",
    "ObjectKind",
    "Surface",
    "Trial",
    "TrialFunction",
    "Variant",
    "Visibility",
]

# Who sees a check's outcome, in Gradescope's own words: "visible" (the
# default), "hidden" (the instructor only, ever), "after_due_date" and
# "after_published" (the learner too, once the due date has passed or the
# grades are published). The local report shows every check to the
# instructor who runs it, marked.
Visibility = Literal["visible", "hidden", "after_due_date", "after_published"]
VISIBILITIES: tuple[Visibility, ...] = ("visible", "hidden", "after_due_date", "after_published")

Kind = Literal["chapter baseline", "exercise"]
BASELINE: Kind = "chapter baseline"
EXERCISE: Kind = "exercise"

# A trial yields questions, receives each answer, and returns None (the
# behaviour holds) or a short reason written for the learner.
Trial = Asks["str | None"]
TrialFunction = Callable[[random.Random], Trial]
# A faulty version of the reference: given the freshly loaded reference module
# and this run's random generator, the surface functions it replaces.
Variant = Callable[[ModuleType, random.Random], Mapping[str, Callable[..., Any]]]

_ID = re.compile(r"^[a-z][a-z0-9_]{0,59}$")
JSON = "json"


class BookError(LookupError):
    """No such exercise book, or a book module that breaks the declaration rules."""


@dataclass(frozen=True)
class Surface:
    """What a learner's tests may use of the module under test, when the grader runs them.

    The grader runs a learner's tests against stand-ins, never against the
    code itself: each name below becomes a function in the stand-in module that
    sends its plain-JSON arguments to the implementation under test, running in
    another process, and returns its plain-JSON answer. Only behaviour crosses.

    `functions`: top-level callables (classes included), each mapped to what
    it returns: `JSON` for plain data, or the name of an object kind.
    `objects`: per object kind, its methods (each mapped like a function) and
    the fields a test may read. `constants`: plain-data module attributes
    (copied from the reference once per run). `paths`: the functions whose
    first argument (or `path=`) names a file, such as a store's `open_store`.
    The code under test runs in another sandbox than the tests, so the path a
    test gives is taken inside a folder of that run's own over there: within
    one run the same path names the same file, and no run meets another's.

    `files`: the tests pass paths of folders they made (in pytest's
    `tmp_path`) to code that reads them. That code runs in another sandbox,
    so before each call the grader copies the tests' temporary folder there,
    to the same path: plain files, folders, links and FIFOs, a few megabytes
    at most (`bookproof.grade.files`).
    """

    functions: Mapping[str, str]
    objects: Mapping[str, ObjectKind] = field(default_factory=dict)
    constants: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    files: bool = False

    def names(self) -> tuple[str, ...]:
        return (*self.functions, *self.constants)

    def describe(self) -> dict[str, Any]:
        """The surface as plain JSON, as the stand-in module and the oracle read it."""
        return {
            "functions": dict(self.functions),
            "objects": {
                kind: {"methods": dict(spec.methods), "fields": list(spec.fields)}
                for kind, spec in self.objects.items()
            },
            "constants": list(self.constants),
            "files": self.files,
        }


@dataclass(frozen=True)
class ObjectKind:
    """The methods (name -> what it returns) and readable fields of one object kind."""

    methods: Mapping[str, str] = field(default_factory=dict)
    fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class FaultyVersion:
    """One faulty version of the reference, run against a learner's tests.

    `id` names it among its test file's versions; `behaviour` finishes the
    sentence "a <module> that ...", for feedback; `make` builds it.
    """

    id: str
    behaviour: str
    make: Variant = field(repr=False)


@dataclass(frozen=True)
class Check:
    """One graded behaviour: a stable id (a gradebook column), its points, and how it is judged.

    `asks` says the behaviour in one sentence (shown when it holds); `hint`
    says what went wrong, seen from outside, when it does not (never the repair: see
    exercises/GRADING.md, "Feedback that teaches"); `section` names the place in the
    chapter to re-read; `visibility` says when a learner may see the outcome
    on Gradescope (see `Visibility`). Either `trial` is set (a behaviour check), or `tests`
    with the faulty `versions` those tests must all catch (a learner-tests check).
    """

    id: str
    points: int
    kind: Kind
    exercise: int | None
    section: str
    asks: str
    hint: str
    requires: Check | None = None
    visibility: Visibility = "visible"
    trial: TrialFunction | None = field(default=None, repr=False)
    tests: LearnerTests | None = field(default=None, repr=False)
    versions: tuple[FaultyVersion, ...] = field(default=(), repr=False)

    @property
    def label(self) -> str:
        """How the report names the check's kind: "chapter baseline" or "exercise N"."""
        return BASELINE if self.exercise is None else f"exercise {self.exercise}"


@dataclass(eq=False)
class LearnerTests:
    """A test file the learner hands in, graded by what it catches.

    The grader runs the file with pytest, in the learner's sandbox, against
    a stand-in of the book's module (see `Surface`), `reference_runs` times
    against the reference solution and once against each faulty version, in a
    random order. A version counts as caught when a test fails against it while
    every test passed in every run against the reference; a suite that asserts
    nothing passes everywhere and catches nothing.
    """

    book: Book
    exercise: int
    file: str
    section: str
    surface: Surface
    reference_runs: int = 3
    checks: list[Check] = field(default_factory=list)

    def catches(
        self, *, points: int, behaviour: str, visibility: Visibility = "visible"
    ) -> Callable[[Variant], Check]:
        """Declare one faulty version: `behaviour` ends "a <module>.py that ...", in feedback."""

        def declare(variant: Variant) -> Check:
            module = self.book.module_file
            return self._add(
                variant.__name__,
                points,
                f"Your {self.file} catches {_a(module)} that {behaviour}.",
                f"Add a test to {self.file} that fails for {_a(module)} that {behaviour}, "
                "and passes for a correct one.",
                (FaultyVersion(variant.__name__, behaviour, variant),),
                visibility,
            )

        return declare

    def catches_all(
        self,
        check_id: str,
        *,
        points: int,
        versions: Mapping[str, Variant],
        visibility: Visibility = "visible",
    ) -> Check:
        """Declare one check over several faulty versions (behaviour -> version), all to be caught.

        Each behaviour finishes "a <module>.py that ...". The check's feedback
        names the versions the tests did not catch.
        """
        if len(versions) < 2:
            raise BookError(f"{check_id}: catches_all takes two faulty versions or more")
        module = self.book.module_file
        made = tuple(FaultyVersion(make.__name__, said, make) for said, make in versions.items())
        every = "; ".join(f"one that {said}" for said in versions)
        return self._add(
            check_id,
            points,
            f"Your {self.file} catches each of these faulty versions of {module}: {every}.",
            f"Add tests to {self.file} that fail for each faulty version named, "
            "and pass for a correct one.",
            made,
            visibility,
        )

    def _add(
        self,
        check_id: str,
        points: int,
        asks: str,
        hint: str,
        versions: tuple[FaultyVersion, ...],
        visibility: Visibility,
    ) -> Check:
        taken = {version.id for check in self.checks for version in check.versions}
        if len({version.id for version in versions}) < len(versions) or taken & {
            version.id for version in versions
        }:
            raise BookError(f"{check_id}: two faulty versions of {self.file} share a name")
        check = Check(
            id=check_id,
            points=points,
            kind=EXERCISE,
            exercise=self.exercise,
            section=self.section,
            asks=asks,
            hint=hint,
            visibility=visibility,
            tests=self,
            versions=versions,
        )
        self.book.add(check)
        self.checks.append(check)
        return check

    def versions(self) -> list[FaultyVersion]:
        """Every faulty version of this file's checks, in declaration order."""
        return [version for check in self.checks for version in check.versions]


def _a(noun: str) -> str:
    """`noun` with its indefinite article, as a sentence of feedback wants it."""
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


class Book:
    """An exercise book's graded interface and its checks, in report order."""

    def __init__(
        self,
        number: int,
        title: str,
        *,
        module: str,
        chapter: str,
        files: tuple[str, ...] | None = None,
    ) -> None:
        self.number = number
        self.title = title
        self.module = module
        self.chapter = chapter
        self.files = files if files is not None else (f"{module}.py",)
        self.checks: list[Check] = []

    @property
    def module_file(self) -> str:
        """The file of the graded module, as feedback names it: `shop_tools.py`."""
        return f"{self.module}.py"

    @property
    def folder(self) -> str:
        """`bookNN`: the folder name of this book under exercises/ and solutions/."""
        return f"book{self.number:02d}"

    def reference(self, root: Path) -> Path:
        """The reference solution's module file, under a repository (or autograder) root."""
        return BookLayout(root).solutions / self.folder / self.module_file

    def section(self, heading: str) -> str:
        """A pointer into the chapter, as feedback prints it: "Chapter 2, '2.5 ...'"."""
        return f"{self.chapter}, '{heading}'"

    def add(self, check: Check) -> None:
        if not _ID.match(check.id):
            raise BookError(f"check id {check.id!r} must match {_ID.pattern}")
        if any(existing.id == check.id for existing in self.checks):
            raise BookError(f"check id {check.id!r} is declared twice")
        if isinstance(check.points, bool) or not isinstance(check.points, int) or check.points < 1:
            raise BookError(f"{check.id}: points must be a positive int")
        if check.visibility not in VISIBILITIES:
            raise BookError(
                f"{check.id}: visibility must be one of {', '.join(VISIBILITIES)}, "
                f"not {check.visibility!r}"
            )
        if check.requires is not None and check.requires not in self.checks:
            raise BookError(f"{check.id}: requires a check this book declared before it")
        self.checks.append(check)

    def baseline(
        self, *, points: int, section: str, asks: str, hint: str, visibility: Visibility = "visible"
    ) -> Callable[[TrialFunction], Check]:
        """Declare a behaviour the chapter's own code already has."""

        def declare(trial: TrialFunction) -> Check:
            check = Check(
                trial.__name__,
                points,
                BASELINE,
                None,
                section,
                asks,
                hint,
                visibility=visibility,
                trial=trial,
            )
            self.add(check)
            return check

        return declare

    def exercise(
        self,
        number: int,
        *,
        points: int,
        section: str,
        asks: str,
        hint: str,
        requires: Check | None = None,
        visibility: Visibility = "visible",
    ) -> Callable[[TrialFunction], Check]:
        """Declare a behaviour exercise `number` adds (credited after `requires`, if given)."""

        def declare(trial: TrialFunction) -> Check:
            check = Check(
                trial.__name__,
                points,
                EXERCISE,
                number,
                section,
                asks,
                hint,
                requires=requires,
                visibility=visibility,
                trial=trial,
            )
            self.add(check)
            return check

        return declare

    def learner_tests(
        self, *, exercise: int, file: str, section: str, surface: Surface, reference_runs: int = 3
    ) -> LearnerTests:
        """Declare a test file the learner hands in; then declare what it must catch."""
        if not re.fullmatch(r"test_[a-z0-9_]+\.py", file):
            raise BookError(f"learner test file {file!r} must be named test_<name>.py")
        if not set(surface.paths) <= set(surface.functions):
            raise BookError(f"{file}: every function in `paths` must be one of `functions`")
        return LearnerTests(self, exercise, file, section, surface, reference_runs)

    def groups(self) -> list[LearnerTests]:
        """Every learner-test file this book grades, in declaration order."""
        found: list[LearnerTests] = []
        for check in self.checks:
            if check.tests is not None and check.tests not in found:
                found.append(check.tests)
        return found

    @property
    def max_points(self) -> int:
        return sum(check.points for check in self.checks)


def book_of(module: ModuleType) -> Book:
    """The `BOOK` a book module declares, checked for what can be checked without running it."""
    book = getattr(module, "BOOK", None)
    if not isinstance(book, Book):
        raise BookError(f"{module.__name__} must define BOOK = Book(...)")
    if not book.checks:
        raise BookError(f"{module.__name__} declares no checks")
    if module.__name__.rsplit(".", 1)[-1] != book.folder:
        raise BookError(f"{module.__name__} declares Book({book.number}, ...)")
    return book
