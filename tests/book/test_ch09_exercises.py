"""Exercise Book 9: graded through the real grader, each typical mistake loses exactly its checks,
tests that assert nothing earn nothing, the solution's own tests (in
tests/book/test_solution_tests.py) pass against it and fail against the starter, the grader's door
answers plain JSON, and the notebooks' cells show the exercises done.

No MCP server runs in any of this: the grader plays the server with the lists it writes, and so
do these tests (the chapter's own tests start the real servers).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, load_module
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
BOOK = EXERCISES / "book09"
SOLUTIONS = ROOT / "solutions" / "book09"
SOLUTION = (SOLUTIONS / "remote_tools.py").read_text(encoding="utf-8")
STARTER = (BOOK / "remote_tools.py").read_text(encoding="utf-8")
TESTS = {
    name: (SOLUTIONS / name).read_text(encoding="utf-8")
    for name in ("test_book09_declarations.py", "test_book09_changes.py")
}

CHAPTER_CHECKS = {
    "ch9_declared_tools_join",
    "ch9_schema_mismatch",
    "ch9_server_words_never_offered",
    "ch9_advertised_twice",
}
UNIT_A = {
    "ex1_price_quote_joins",
    "ex1_one_constraint_off",
    "ex1_not_advertised",
    "ex1_tests_catch_no_upper_bound",
    "ex1_tests_catch_other_bounds",
    "ex1_tests_catch_name_only",
    "ex1_tests_catch_server_description",
}
UNIT_B = {
    "ex2_reworded_is_changed",
    "ex2_schema_vanished_or_twice",
    "ex2_judged_against_connection",
    "ex2_only_joined_tools",
    "ex2_tests_catch_against_the_last_list",
    "ex2_tests_catch_description_ignored",
    "ex2_tests_catch_vanished_unseen",
}
# Unit C, an open design task: graded by what the model is still offered, never by code shape.
UNIT_C = {
    "ex3_changed_stays_withdrawn",
    "ex3_spending_goes_with_any_change",
    "ex3_nothing_changed_nothing_withdrawn",
}

# name -> (edits to the solution, the checks the result must fail). The tests
# handed in are the solution's own, which still pass against the reference.
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Declared under the server's name: the shop's name never reaches the model,
    # and every refusal is filed under another name.
    "server_name_as_local": (
        [('    name="supplier_price_quote",', '    name="price_quote",')],
        {"ex1_price_quote_joins", "ex1_one_constraint_off", "ex1_not_advertised"},
    ),
    # A quote changes nothing; declaring it consequential would need write authority.
    "quote_consequential": (
        [('    remote="price_quote",', '    remote="price_quote",\n    consequential=True,')],
        {"ex1_price_quote_joins"},
    ),
    # Another class name is another schema title: the supplier's exact schema is refused.
    "model_misnamed": (
        [
            ("class PriceQuote(BaseModel):", "class Quote(BaseModel):"),
            ("arguments=PriceQuote,", "arguments=Quote,"),
        ],
        {"ex1_price_quote_joins"},
    ),
    # Comparing schemas only: a reworded description (the rug pull) goes unseen.
    "description_ignored": (
        [
            (
                '{"name": tool.name, "description": tool.description, '
                '"inputSchema": tool.input_schema}',
                '{"name": tool.name, "inputSchema": tool.input_schema}',
            )
        ],
        {"ex2_reworded_is_changed", "ex2_judged_against_connection", "ex2_only_joined_tools"},
    ),
    # A tool that vanished, or is listed twice, judged by whichever copy comes first.
    "vanished_or_twice_unseen": (
        [
            (
                "        if len(before) != 1 or len(after) != 1:\n"
                "            changed.add(declaration.name)\n"
                "            continue\n",
                "        if not after:\n            continue\n",
            )
        ],
        {"ex2_schema_vanished_or_twice"},
    ),
    # Unit C's plausible wrong designs. Each list judged alone, as section 9.6 judges
    # it: a tool listed as it was again comes back, and the spending tool with it.
    # The guard check waits for the first, so it fails with it.
    "forgets_between_lists": (
        [
            (
                "    for listing in relists:\n        now = seen(listing)\n",
                "    for listing in relists:\n"
                "        withdrawn = set()\n"
                "        now = seen(listing)\n",
            )
        ],
        UNIT_C,
    ),
    # Section 9.6's rule alone: only the changed tool goes, place_order stays.
    "spending_kept": (
        [
            (
                "            withdrawn.update(d.name for d in joined if d.consequential)\n",
                "            pass\n",
            )
        ],
        {"ex3_spending_goes_with_any_change"},
    ),
}

# Tests that call the door and assert nothing: they pass everywhere, so they catch nothing.
SILENT_TESTS = {
    "test_book09_declarations.py": (
        "from remote_tools import join\n\n\n"
        "def test_a_list_is_joined():\n"
        "    join([{'name': 'price_quote', 'description': 'x', 'inputSchema': {}}])\n"
    ),
    "test_book09_changes.py": (
        "from remote_tools import watch\n\n\n"
        "def test_a_session_is_watched():\n"
        "    watch([], [[]])\n"
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book09")
    folders = {"starter": {"remote_tools.py": STARTER}}
    folders["silent_tests"] = {"remote_tools.py": SOLUTION, **SILENT_TESTS}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"remote_tools.py": edited(SOLUTION, edits), **TESTS}
    return grade_batch(9, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    # The ids are the gradebook's columns: written out here, a renamed one is seen.
    assert {check.id for check in load_book(9).checks} == CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C


def test_the_untouched_starter_earns_its_baseline_and_no_exercise_point(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (5, 5)
    assert starter.exercises[0] == 0
    assert starter.failed == UNIT_A | UNIT_B | UNIT_C


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def test_tests_that_assert_nothing_catch_nothing(report: dict[str, Graded]) -> None:
    assert report["silent_tests"].failed == {
        check for check in UNIT_A | UNIT_B if "_tests_catch_" in check
    }


def load(text: str, tmp_path: Path) -> ModuleType:
    return load_module(text, tmp_path, "book09", "remote_tools")


def test_the_grader_door_answers_in_plain_json(tmp_path: Path) -> None:
    remote = load(SOLUTION, tmp_path)
    quote = remote.parameters_schema(remote.PriceQuote)
    listed = [
        {"name": "price_quote", "description": "secret-token-door", "inputSchema": quote},
        {"name": "next_delivery", "inputSchema": remote.parameters_schema(remote.NoArguments)},
    ]
    joined = remote.join(listed)
    assert json.loads(json.dumps(joined)) == joined
    assert [tool["name"] for tool in joined["offered"]] == ["next_delivery", "supplier_price_quote"]
    assert "secret-token-door" not in json.dumps(joined)
    assert joined["refused"] == [
        ["check_availability", "not_advertised"],
        ["place_order", "not_advertised"],
    ]
    reworded = [{**listed[0], "description": "changed"}, listed[1]]
    watched = remote.watch(listed, [listed, reworded, listed[1:]])
    assert json.loads(json.dumps(watched)) == watched
    assert watched == {
        "joined": ["next_delivery", "supplier_price_quote"],
        "changed": [[], ["supplier_price_quote"], ["supplier_price_quote"]],
    }


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        (
            "unit_a",
            [
                "['check_availability', 'next_delivery', 'supplier_price_quote']",
                "server's words offered: False",
                "properties/quantity/maximum = None -> [['supplier_price_quote', "
                "'schema_mismatch']]",
            ],
        ),
        (
            "unit_b",
            [
                "{'joined': ['check_availability', 'next_delivery'], "
                "'changed': [[], ['check_availability']]}",
                "[['check_availability'], ['next_delivery'], ['check_availability']]",
                "[['check_availability'], ['check_availability'], ['check_availability'], []]",
                "[[]]",
            ],
        ),
        (
            "unit_c",
            [
                "after list 1: ['check_availability', 'next_delivery', 'place_order']",
                "after list 2: ['next_delivery']",
                "after list 3: ['next_delivery']",
                "[['check_availability', 'next_delivery', 'place_order'],"
                " ['check_availability', 'next_delivery']]",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "remote_tools.py", SOLUTION, unit, "test_book09_*.py")
    for line in with_the_solution:
        assert line in lines, line


def test_unit_cs_cells_say_not_yet_with_the_starter(tmp_path: Path) -> None:
    lines = check_cell_lines(
        tmp_path, BOOK, "remote_tools.py", STARTER, "unit_c", "test_book09_*.py"
    )
    assert "not yet: Exercise 3: write still_offered" in lines
