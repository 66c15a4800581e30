"""The exercise grader: checks declared once, asked of sandboxed submissions, decided here.

A submission cannot grade itself. The grading process never imports it: a
child process in a bubblewrap sandbox (`sandbox`) imports the submission from
a copy of its folder and answers questions about it one at a time
(`child.harness`, driven by `session`). The grader decides every check from
those plain answers, against data it randomised for this run from a seed it
records; the child holds nothing that could make a check pass. Reports are
written once, whole, after every child is gone. The grading contract and the
threat model are in `exercises/GRADING.md`.

Writing an exercise book's checks
=================================

One module per book, `bookproof/grade/books/bookNN.py`, declaring `BOOK`; a
book too large to read at a glance is a package, `bookNN/`, whose `__init__`
declares `BOOK` and imports its other parts in report order. Scenario data
more than one book needs (a seeded store, chapter 6's Friday, an invented
product) lives in `fixtures`, so a book module holds its checks.
A check is one decorated generator: its name is the check's id (and its
gradebook column); the decorator holds its points, kind, section and the two
sentences a learner reads; the body yields questions and returns None (the
behaviour holds) or a short reason. Data comes from the check's own
`random.Random` and from `fixtures` (the shop every book shares), so an
answer recorded in one run is useless in the next::

    import random

    from bookproof.grade import fixtures as fx
    from bookproof.grade.book import Book, Trial
    from bookproof.grade.questions import call, expect, method, same, tool_call

    BOOK = Book(6, "Exercise Book 6: reservations and deliveries",
                module="store_tools", chapter="Chapter 6")
    S_NEED = BOOK.section("6.2 The need, again")

    @BOOK.baseline(                       # the chapter's code already does this
        points=1,
        section=S_NEED,
        asks="list_stock reports every row with its need, sorted by sku.",
        hint="A row was missing from the stock report, or its need or order was wrong.",
    )
    def ch6_stock_report(rng: random.Random) -> Trial:
        rows = [*fx.shop_rows(), fx.extra_product(rng)]
        d = yield call("build_tools", fx.shop(rows), fx.prices(), keep=True)  # a Ref
        report = yield method(d, "invoke", tool_call(fx.call_id(rng), "list_stock", {}))
        return expect(fx.report_view(report) == fx.expected_report(rows),
                      "The stock report is not right.")

    @BOOK.exercise(                       # exercise 1 adds this; the starter must fail it
        1,
        points=2,
        section=BOOK.section("6.9 Exercises") + " (Exercise Book 6, Unit A)",
        asks="Incoming tubs lower the need: 2 on hand, target 8, 4 incoming needs 2.",
        hint="Tubs already on their way left the need as high as before.",
    )
    def ex1_incoming(rng: random.Random) -> Trial:
        need = yield call("replenishment_need", {**fx.shop_rows()[0], "incoming": 4})
        return expect(same(2, need), "Vanilla with 4 incoming needs 2 tubs.")

Any check may also say when a learner sees its outcome on Gradescope:
`visibility="after_due_date"`, `"after_published"` or `"hidden"` (the
default is `"visible"`). It changes who sees the check, never its points;
exercises/GRADING.md says what each means and why book 2 defers some.

Where the chapter's code already has the behaviour an exercise asks for, the
learner's tests are the deliverable; declare the file, what those tests may
use of the module (a `Surface`: names that pass only plain values), and each
faulty version of the reference they should catch. A faulty version gets the
freshly loaded reference module and this run's random generator, and returns
the surface functions it replaces::

    from bookproof.grade.book import JSON, ObjectKind, Surface

    COUNT_TESTS = BOOK.learner_tests(
        exercise=2,
        file="test_book06_count.py",
        section=BOOK.section("6.9 Exercises") + " (Exercise Book 6, Unit B)",
        surface=Surface(
            functions={"build_tools": "Dispatcher", "ToolCall": "ToolCall"},
            objects={
                "Dispatcher": ObjectKind(methods={"invoke": JSON}),
                "ToolCall": ObjectKind(fields=("id", "name", "arguments")),
            },
            constants=("SHOP",),
        ),
    )

    @COUNT_TESTS.catches(points=1, behaviour="counts incoming tubs twice")
    def ex2_tests_catch_incoming_twice(reference, rng):
        def build_tools(shop, prices, **options):
            rows = [{**row, "incoming": 2 * row.get("incoming", 0)} for row in shop["products"]]
            return reference.build_tools({**shop, "products": rows}, prices, **options)

        return {"build_tools": build_tools}

The check's id is the function's name; its feedback says "Add a test to
test_book06_count.py that fails for a store_tools.py that counts incoming tubs
twice". `COUNT_TESTS.catches_all("ex2_tests_catch", points=2, versions={...})`
declares one check over several faulty versions (behaviour -> version), which
passes when the tests catch every one, and names those they missed. The
tests must pass in every run against the reference to earn anything, so a
suite that asserts nothing, or passes by chance, earns nothing
(`learner_tests` says how the runs are made).

A check about code that reads a folder (skills, documents) gets its folder
from the grader, never from the submission: it yields `folder(tree)` before
its first question and receives the path where the submission's sandbox
shows that folder, read-only. The grader makes every check's folders from
the check's own random data before the submission's process starts, so
nothing of the description (which entry is a link, which one a FIFO) ever
reaches that process: whatever it answers about the folder, it read from the
disk. A tree maps names to file texts (`str`, or `bytes`), folders
(mappings), `Link(target)` (relative, as written; or `absolute=True`, a path
inside the check's folder), `Fifo()` and `Sparse(size)`; what a link out of
the folder should reach goes beside it, in the same tree::

    from bookproof.grade.files import Fifo, Link, Sparse
    from bookproof.grade.questions import folder

    @BOOK.exercise(
        2,
        points=1,
        section=BOOK.section("6.9 Exercises") + " (Exercise Book 6, Unit B)",
        asks="Only plain notes are listed: not links, FIFOs or files over 4,096 bytes.",
        hint="A link, a FIFO or an oversized file was listed as a note.",
    )
    def ex2_lists_plain_notes(rng: random.Random) -> Trial:
        secret = "secret-token-" + fx.token(rng, 12)
        note = fx.token(rng, 6) + ".md"
        base = yield folder(
            {
                "notes": {
                    note: "Vanilla.",
                    "out.md": Link("../private.txt"),
                    "inbox": Fifo(),
                    "huge.md": Sparse(5_000),
                },
                "private.txt": secret,
            }
        )
        names = yield call("list_notes", f"{base}/notes")
        return expect(same([note], names), "Only the plain note should be listed.")

Where the learner's tests make such folders themselves (with plain file
operations, in pytest's `tmp_path`), their `Surface` says `files=True`: the
code under test runs in another sandbox, and before each call the tests'
temporary folder is copied there, to the same path (`learner_tests`).

The rules, which the grader and the test suite hold every book to:

- The untouched starter earns no exercise point. A check that only guards an
  exercise against going too far (calls that were not refused still run)
  already holds in the starter: declare it with `requires=<the check of the
  work>` and it earns its points only once that check passes.
- Where an exercise's behaviour already holds in the chapter's code, the
  deliverable is the learner's tests: `BOOK.learner_tests(...)` names the file
  and the `Surface` the tests may use, and each `@tests.catches(...)` declares
  one faulty version of the reference (`solutions/bookNN/<module>.py`). The
  grader runs the tests against stand-ins that pass only plain values, so a
  test can recognise the reference by its behaviour and by nothing else. A
  surface function that opens a file names it in `paths`: the implementation
  takes the test's path inside a folder of that run's own.
- Questions (`questions`): `call`, `method` (with `keep=True` to hold an
  object in the child and get a `Ref`), `let`/`get`/`set_item` for the
  caller's own data, `attrs`, `probe`/`probe_count` for a tool whose runs are
  counted, `stub` to see where a value comes from, `scratch_path` for a file
  in a folder of the check's own (a store), `raises=True` to receive the
  whole `Answer` (exceptions included), and `folder` (before any question)
  for a folder the grader makes. Without `raises`, an exception or a value
  that is not plain data ends the check with feedback the grader writes.
  A hand-in may hold data beside code (book 4's suite): `handed_in` gives a
  check that file's text, read by the grader from its own copy of the folder,
  for the check to judge with the book's runtime in the grading process.
- Expected values are computed in the check from data it chose, never by
  calling the submission, never from a value it returned. A folder the code
  under test reads is the grader's (`folder`), never one the submission's
  own code builds from a description: that code would know the answer. A
  reason may quote numbers; it never quotes a string the submission returned
  (a planted secret must not reach a report), and no feedback ever shows
  solution code.
- `section` names the chapter section that teaches the behaviour, by its
  heading (`BOOK.section("2.8 The dispatcher and its order of checks")`).

Modules: `book` (the declarations), `questions` (what a check can ask),
`fixtures` (the shared shop), `files` (folders made from a description),
`books` (one module per book), `runner` (one submission), `session` and
`child` (the conversation with the sandbox), `learner_tests` and `oracle`
(grading a learner's tests), `reuse` (identical runs of them, run once per
batch), `intake` (copying a folder safely), `sandbox`,
`report`, `gradescope`, `cli`.
"""
