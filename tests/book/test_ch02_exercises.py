"""Exercise Book 2: full marks for the reference, no exercise point for the starter, each mistake.

Each wrong variant is the reference solution with one mistake a learner could
make, or the reference with a test file a learner could hand in; it must lose
exactly the checks that cover that mistake and keep every other point. The
grader runs as a real subprocess over real folders, all in one batch.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from committed import EXERCISES
from grading import Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
SOLUTIONS = ROOT / "solutions" / "book02"
SOLUTION = (SOLUTIONS / "shop_tools.py").read_text(encoding="utf-8")
STARTER = (EXERCISES / "book02" / "shop_tools.py").read_text(encoding="utf-8")
MANGO_TESTS = (SOLUTIONS / "test_book02_mango.py").read_text(encoding="utf-8")
BOOK = load_book(2)
TESTS_CHECKS = {check.id for check in BOOK.checks if check.tests is not None}

RESERVED = 'row.get("reserved", 0)'
NEED_LINE = 'return max(0, row["reorder_point"] - row["on_hand"] + reserved)'
DRAFT_NEED = "need = replenishment_need(find_product(products, sku))"
REPORT_NEED = 'rows = [{**row, "needed": replenishment_need(row)} for row in products]'
ALLOWED = "allowed=SHOP_TOOL_NAMES if allowed is None else allowed,"
# Exercise 4's reference: the argument model's tubs, and the promises already made.
TUBS_FIELD = "    tubs: int = Field(ge=1, le=MAX_TUBS_PER_RESERVATION)\n"
PROMISED = (
    '        promised = row.get("reserved", 0) + sum(\n'
    '            reservation["tubs"]\n'
    "            for reservation in reservations\n"
    '            if reservation["sku"] == arguments.sku\n'
    "        )\n"
)
# Unit C, an open design task: graded by what a dispatcher answers and what the tool wrote.
UNIT_C = {
    "ex4_promises_made",
    "ex4_never_more_than_the_freezer",
    "ex4_numbers_refused",
    "ex4_unknown_flavour",
}

# name -> (edits to the solution, the checks it must lose)
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # A missing price borrows the cheapest known one: chapter 2 already refuses.
    "borrows_a_price": (
        [
            (
                "quote = supplier_quote(prices, sku)",
                "quote = supplier_quote({sku: min(prices.values()), **prices}, sku)",
            )
        ],
        {"ch2_missing_price"},
    ),
    # Exercise 1: duplicate skus slip through.
    "no_duplicate_sku_check": (
        [("raise ValueError(f\"duplicate sku: {row['sku']!r}\")", "pass")],
        {"ex1_duplicate_sku"},
    ),
    # Exercise 2: the draft check keeps its own copy of chapter 2's formula.
    "draft_ignores_reserved": (
        [
            (
                DRAFT_NEED,
                "row = find_product(products, sku)\n"
                '    need = max(0, row["reorder_point"] - row["on_hand"])',
            )
        ],
        {"ex2_draft_reserved", "ex2_one_need_function"},
    ),
    # Exercise 2: the report keeps its own copy of the formula.
    "report_ignores_reserved": (
        [
            (
                REPORT_NEED,
                'rows = [{**row, "needed": max(0, row["reorder_point"] - row["on_hand"])}'
                " for row in products]",
            )
        ],
        {"ex2_report_reserved", "ex2_one_need_function"},
    ),
    # Exercise 2: the formula is right, but written out in the report too.
    "report_copies_the_rule": (
        [
            (
                REPORT_NEED,
                'rows = [{**row, "needed": max(0, row["reorder_point"] - row["on_hand"]'
                ' + row.get("reserved", 0))} for row in products]',
            )
        ],
        {"ex2_one_need_function"},
    ),
    # Exercise 2: reserved is never counted; the guards it holds back go with it.
    "need_ignores_reserved": (
        [(NEED_LINE, 'return max(0, row["reorder_point"] - row["on_hand"])')],
        {
            "ex2_need_reserved",
            "ex2_reserved_absent",
            "ex2_above_target",
            "ex2_report_reserved",
            "ex2_draft_reserved",
        },
    ),
    # Exercise 3: allowed=None lets every registered tool through.
    "extras_allowed_by_default": (
        [(ALLOWED, "allowed=[t.name for t in tools] if allowed is None else allowed,")],
        {"ex3_probe_hidden", "ex3_probe_refused"},
    ),
    # Exercise 3: extra tools are never registered (the starter's way).
    "extras_dropped": (
        [("        *extra_tools,\n", "")],
        {"ex3_probe_allowed", "ex3_probe_hidden", "ex3_probe_refused", "ex3_duplicate_tool"},
    ),
    # Exercise 3: a later tool silently replaces an earlier one of the same name.
    "duplicates_overwrite": (
        [
            (
                "    return Dispatcher(\n        tools,",
                "    tools = list({t.name: t for t in tools}.values())\n"
                "    return Dispatcher(\n        tools,",
            )
        ],
        {"ex3_duplicate_tool"},
    ),
    # Exercise 4 (Unit C's open design): no bounds on the tubs, so 0 and -3 are promised.
    "reservation_unbounded": (
        [(TUBS_FIELD, "    tubs: int\n")],
        {"ex4_numbers_refused"},
    ),
    # Exercise 4: the bounds checked in the handler, so 0 and 21 tubs fail as requests wrong
    # for the shop (tool_failed) instead of being refused before anything runs.
    "reservation_bounds_in_the_handler": (
        [
            (TUBS_FIELD, "    tubs: int\n"),
            (
                "        row = find_product(products, arguments.sku)\n",
                "        if not 1 <= arguments.tubs <= MAX_TUBS_PER_RESERVATION:\n"
                '            raise ValueError("from 1 to 20 tubs")\n'
                "        row = find_product(products, arguments.sku)\n",
            ),
        ],
        {"ex4_numbers_refused"},
    ),
    # Exercise 4: only the stock's promises counted, not those made earlier in the run.
    "reservation_forgets_the_runs_promises": (
        [(PROMISED, '        promised = row.get("reserved", 0)\n')],
        {"ex4_never_more_than_the_freezer"},
    ),
    # Exercise 4: the promise written down before the check that refuses it.
    "reservation_written_before_the_check": (
        [
            (
                "        if arguments.tubs > free:\n",
                '        reservations.append({"sku": arguments.sku, "tubs": arguments.tubs})\n'
                "        if arguments.tubs > free:\n",
            ),
            ("        reservations.append(reservation)\n", ""),
        ],
        {"ex4_never_more_than_the_freezer"},
    ),
}

# Test files a learner could hand in beside the reference solution.
TEST_FILES: dict[str, tuple[str, set[str]]] = {
    "tests_assert_nothing": (
        "from shop_tools import build_tools\n\n\ndef test_nothing():\n    pass\n",
        TESTS_CHECKS,
    ),
    "tests_only_the_total": (
        "from shop_tools import SHOP, ToolCall, build_tools\n\n\n"
        "def test_mango_total():\n"
        '    mango = {"sku": "SKU-MANGO", "name": "Mango", "on_hand": 1, "reorder_point": 5}\n'
        '    shop = {**SHOP, "products": [*SHOP["products"], mango]}\n'
        '    prices = {"SKU-VANILLA": 250, "SKU-CHOCOLATE": 300, "SKU-STRAWBERRY": 275}\n'
        '    tools = build_tools(shop, prices | {"SKU-MANGO": 325})\n'
        '    arguments = {"sku": "SKU-MANGO", "quantity": 4}\n'
        '    call = ToolCall(id="t", name="draft_order", arguments=arguments)\n'
        '    assert tools.invoke(call)["value"]["total_pence"] == 1300\n',
        TESTS_CHECKS - {"ex1_tests_catch_new_product_price"},
    ),
    "tests_fail_everywhere": (
        "def test_always_fails():\n    assert False\n",
        TESTS_CHECKS,
    ),
    "tests_import_beyond_the_surface": (
        MANGO_TESTS.replace(
            "from shop_tools import SHOP, ToolCall, build_tools",
            "from shop_tools import SHOP, ToolCall, build_tools, ExecutableTool",
        ),
        TESTS_CHECKS,
    ),
}


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book02")
    with_tests = {"test_book02_mango.py": MANGO_TESTS}
    folders: dict[str, dict[str, str]] = {
        "starter": {"shop_tools.py": STARTER},
    }
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"shop_tools.py": edited(SOLUTION, edits), **with_tests}
    for name, (tests, _) in TEST_FILES.items():
        folders[name] = {"shop_tools.py": SOLUTION, "test_book02_mango.py": tests}
    return grade_batch(2, folders, base=base, shared=shared_grades)


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert (starter.baseline, starter.exercises) == ((12, 12), (0, 28))
    assert starter.failed >= UNIT_C
    for guard in ("ex2_reserved_absent", "ex2_above_target", "ex3_probe_hidden"):
        assert starter.outcomes[guard] == "locked"


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


@pytest.mark.parametrize("tests", sorted(TEST_FILES))
def test_learner_tests_earn_what_they_catch_and_nothing_more(
    report: dict[str, Graded], tests: str
) -> None:
    assert report[tests].failed == TEST_FILES[tests][1]


def test_scores_do_not_depend_on_the_random_data(tmp_path: Path) -> None:
    # Random extras change every run; a right answer must stay right for all of them.
    for seed in ("1", "2"):
        folder = tmp_path / seed
        folder.mkdir()
        graded = grade_batch(
            2,
            {"solution": {"shop_tools.py": SOLUTION, "test_book02_mango.py": MANGO_TESTS}},
            base=folder,
            options=["--seed", seed],
        )
        assert graded["solution"].full


# --- the solution's own tests, run as a learner runs them ---------------------------


def _pytest_in_copy(tmp_path: Path, shop_tools: str) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "book02"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "shop_tools.py").write_text(shop_tools, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_solutions_own_tests_pass_against_the_reference_solution(tmp_path: Path) -> None:
    completed = _pytest_in_copy(tmp_path, SOLUTION)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "14 passed" in completed.stdout


def test_the_solutions_own_tests_fail_against_the_untouched_starter(tmp_path: Path) -> None:
    completed = _pytest_in_copy(tmp_path, STARTER)
    assert completed.returncode == 1
    for name in (
        "test_need_counts_reserved_tubs",
        "test_draft_check_uses_the_reserved_need",
        "test_allowing_the_probe_by_name_makes_it_callable",
        "test_two_rows_under_one_sku_are_refused_at_construction",
    ):
        assert name in completed.stdout
