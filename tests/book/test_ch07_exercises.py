"""Exercise Book 7: graded through the real grader CLI, the reference scores full marks, the starter
earns its chapter baseline and no exercise point, each typical mistake loses exactly its checks,
tests that assert nothing earn nothing, and a submission that looks for its answers anywhere but in
the skills folders it is given earns nothing either; the solution's own tests (in
tests/book/test_solution_tests.py) pass against it and fail against the starter, the grader's door
speaks plain JSON over real skills folders, and the notebooks match their plans.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, hand_in, run_in
from grading import LEAK_HUNT, Graded, SharedGrades, edited, grade_batch
from system_components import require_executable

from bookproof.grade.books import load_book
from bookproof.grade.intake import copy_submission
from bookproof.grade.questions import call
from bookproof.grade.sandbox import Isolation, Limits
from bookproof.grade.session import Session
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
BOOK = EXERCISES / "book07"
SOLUTIONS = ROOT / "solutions" / "book07"
SOLUTION = (SOLUTIONS / "skill_tools.py").read_text(encoding="utf-8")
STARTER = (BOOK / "skill_tools.py").read_text(encoding="utf-8")
SKILLS = ROOT / "book" / "textbook" / "skills"

TESTS = {
    name: (SOLUTIONS / name).read_text(encoding="utf-8")
    for name in ("test_book07_review.py", "test_book07_references.py")
}
CHAPTER_CHECKS = {
    "ch7_reads_skills",
    "ch7_malformed_named",
    "ch7_links_out_refused",
    "ch7_narrows",
    "ch7_never_widens",
}
UNIT_A = {
    "ex1_keeps_and_removes",
    "ex1_ignores_and_unknown",
    "ex1_unreachable_steps",
    "ex1_lists_nothing",
    "ex1_tests_catch",
}
UNIT_B = {
    "ex2_load_lists_references",
    "ex2_read_after_load",
    "ex2_refused_before_load",
    "ex2_names_are_plain",
    "ex2_bounded",
    "ex2_kept_only_if_listed",
    "ex2_runs_do_not_share",
    "ex2_tests_catch",
}
# Unit C, an open design task: graded by the catalogue's text, never by how it was worked out.
UNIT_C = {
    "ex3_catalogue_fits",
    "ex3_catalogue_spares_the_short",
    "ex3_catalogue_whole_when_it_fits",
    "ex3_catalogue_too_small_refused",
}
# Exercise 3's reference: chapter 7's catalogue when it fits, and the cut lines joined.
WHOLE_FITS = "    if len(whole) <= budget:\n        return whole\n"
CUT_LINES = (
    '    return "\\n".join(\n'
    '        f"- {name}: {text if len(text) <= cap else text[: cap - len(CUT_MARK)] + CUT_MARK}"\n'
    "        for name, text in lines\n"
    "    )\n"
)

# name -> (edits to the solution, the checks the result must fail). The tests
# handed in are the solution's own, which still pass against the reference:
# a mistake in the module loses behaviour checks only.
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Usable from the allowlist alone: a name the run allows but no tool has looks kept.
    "allowed_alone": (
        [
            (
                "usable = set(dispatcher.allowed) & registered",
                "usable = set(dispatcher.allowed)",
            )
        ],
        {"ex1_keeps_and_removes", "ex1_ignores_and_unknown", "ex1_lists_nothing"},
    ),
    # The mistake the chapter exists to prevent: the skill's list, kept whole.
    "widening": (
        [
            (
                "keeps = usable if listed is None else usable & listed",
                "keeps = usable if listed is None else set(listed)",
            )
        ],
        {"ex1_keeps_and_removes", "ex1_unreachable_steps"},
    ),
    "unknown_is_ignored": (
        [
            (
                '"unknown": [] if listed is None else sorted(listed - registered),',
                '"unknown": [] if listed is None else sorted(listed - usable),',
            )
        ],
        {"ex1_ignores_and_unknown"},
    ),
    "every_backticked_word": (
        [
            (
                "mentioned = {word for word in TOOL_MENTION.findall(skill.instructions) "
                "if word in known}",
                "mentioned = set(TOOL_MENTION.findall(skill.instructions))",
            )
        ],
        {"ex1_unreachable_steps"},
    ),
    "no_list_keeps_nothing": (
        [
            (
                "keeps = usable if listed is None else usable & listed",
                "keeps = set() if listed is None else usable & listed",
            )
        ],
        {"ex1_lists_nothing"},
    ),
    # One set of loaded skills for every run: a later run reads what an earlier one loaded.
    "loads_shared_between_runs": (
        [
            ("    loaded: set[str] = set()\n\n    def load(", "\n    def load("),
            ("def reference_tools(", "loaded: set[str] = set()\n\n\ndef reference_tools("),
        ],
        {"ex2_runs_do_not_share"},
    ),
    "no_name_rule": (
        [
            (
                "name: str = Field(min_length=4, max_length=64, pattern=REFERENCE_NAME)",
                "name: str = Field(min_length=4, max_length=64)",
            )
        ],
        {"ex2_names_are_plain"},
    ),
    # Adding the references to a bare value undoes the skill's narrowing: the
    # chapter's own checks catch it, and so does exercise 2's.
    "load_drops_the_narrow": (
        [
            (
                '            value = {**result.value, "references": names}\n'
                "            return Narrow(value, keep=result.keep, reason=result.reason)",
                '            return {**result.value, "references": names}',
            )
        ],
        {
            "ch7_narrows",
            "ch7_never_widens",
            "ex2_load_lists_references",
            "ex2_kept_only_if_listed",
        },
    ),
}

MISTAKES |= {
    # Exercise 3 (Unit C's open design): descriptions cut to fit, with nothing to say so.
    "catalogue_without_the_mark": (
        [(CUT_LINES, CUT_LINES.replace("text[: cap - len(CUT_MARK)] + CUT_MARK", "text[:cap]"))],
        {"ex3_catalogue_fits", "ex3_catalogue_whole_when_it_fits"},
    ),
    # Exercise 3: the room handed out line by line, in the catalogue's order, each line
    # leaving only the mark for every line after it: a vendor's skill that sorts first takes it.
    "catalogue_first_come_first_served": (
        [
            (
                CUT_LINES,
                "    shown = []\n"
                "    for index, (name, text) in enumerate(lines):\n"
                "        spare = room - (len(lines) - index - 1) * len(CUT_MARK)\n"
                "        fitted = text if len(text) <= spare else "
                "text[: spare - len(CUT_MARK)] + CUT_MARK\n"
                "        room -= len(fitted)\n"
                '        shown.append(f"- {name}: {fitted}")\n'
                '    return "\\n".join(shown)\n',
            )
        ],
        {"ex3_catalogue_spares_the_short"},
    ),
    # Exercise 3: every description over an equal share cut, even when the whole catalogue fits.
    "catalogue_always_cut_to_the_share": (
        [(WHOLE_FITS, ""), (CUT_LINES, "    cap = room // len(lines)\n" + CUT_LINES)],
        {"ex3_catalogue_whole_when_it_fits"},
    ),
    # Exercise 3: a budget too small for the names is answered anyway, over it.
    "catalogue_never_refuses": (
        [("    if room < len(lines) * len(CUT_MARK):\n", "    if False:\n")],
        {"ex3_catalogue_too_small_refused"},
    ),
}

# Tests that call the door and assert nothing: they pass everywhere, so they catch nothing.
SILENT_TESTS = {
    "test_book07_review.py": (
        "from skill_tools import review_folder\n\n\n"
        "def test_a_review_runs(tmp_path):\n"
        "    review_folder(str(tmp_path), ['list_stock'])\n"
    ),
    "test_book07_references.py": (
        "from skill_tools import run_calls\n\n\n"
        "def test_a_run_runs(tmp_path):\n"
        "    run_calls(str(tmp_path), ['list_stock'], [['list_stock', {}]])\n"
    ),
}

# The starter, whose exercise 1 answers come from anywhere but the skills
# folder it is asked about: the grader's memory, its command line, files it
# can see beside the folder, or a description the grader once handed to a
# function (the old `write_folder`). Nothing of a folder ever arrives but the
# folder, so it earns what the starter earns.
HOSTILE = (
    STARTER
    + LEAK_HUNT
    + """

DESCRIBED = {}


def write_folder(entries, outside=None):
    DESCRIBED["last"] = entries
    return "/nowhere"


def review_folder(root, allowed):
    if "last" in DESCRIBED:
        return [{"skill": name} for name in sorted(DESCRIBED["last"])]
    for text in everything_but_the_files(root):
        if '"keeps"' in text and text.lstrip().startswith("["):
            try:
                return json.loads(text)
            except ValueError:
                pass
    return []
"""
)


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book07")
    folders = {"starter": {"skill_tools.py": STARTER}}
    folders["silent_tests"] = {"skill_tools.py": SOLUTION, **SILENT_TESTS}
    folders["hostile"] = {"skill_tools.py": HOSTILE}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"skill_tools.py": edited(SOLUTION, edits), **TESTS}
    return grade_batch(7, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    # The ids are the gradebook's columns: written out here, a renamed one is seen.
    book = load_book(7)
    assert {check.id for check in book.checks} == CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C
    assert book.max_points == 31


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (6, 6)
    assert starter.exercises == (0, 25)
    assert starter.failed == UNIT_A | UNIT_B | UNIT_C
    assert starter.outcomes["ex3_catalogue_whole_when_it_fits"] == "locked"


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def test_tests_that_assert_nothing_catch_nothing(report: dict[str, Graded]) -> None:
    assert report["silent_tests"].failed == {"ex1_tests_catch", "ex2_tests_catch"}


def test_answers_from_anywhere_but_the_folders_earn_nothing(report: dict[str, Graded]) -> None:
    hostile = report["hostile"]
    assert hostile.baseline == (6, 6)
    assert hostile.exercises == (0, 25)


DOOR_SCRIPT = """
import json, sys
import skill_tools as s
root = sys.argv[1]
run = ["draft_order", "list_stock", "load_skill", "read_reference", "supplier"]
seen = {
    "skills": s.skills_in_folder(root),
    "review": s.review_folder(root, ["list_stock", "load_skill"]),
    "bulk": s.run_calls(root, run, [["load_skill", {"skill": "bulk-buyer"}],
                                    ["place_order", {"sku": "SKU-VANILLA", "quantity": 500}]]),
    "missing": s.skills_in_folder(root + "/nowhere"),
    "catalogue": s.catalogue_in_folder(root, 200),
}
print(json.dumps(seen, sort_keys=True))
"""


def test_the_grader_door_answers_in_plain_json_over_real_folders(tmp_path: Path) -> None:
    folder = hand_in(tmp_path, SOLUTIONS, "skill_tools.py", SOLUTION)
    result = run_in(folder, "-c", DOOR_SCRIPT, str(SKILLS))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert [skill["name"] for skill in seen["skills"]] == [
        "bulk-buyer",
        "morning-reorder",
        "price-check",
    ]
    assert seen["skills"][0]["allowed_tools"] == ["list_stock", "place_order"]
    assert seen["review"][0] == {
        "skill": "bulk-buyer",
        "lists": ["list_stock", "place_order"],
        "keeps": ["list_stock"],
        "removes": ["load_skill"],
        "ignores": ["place_order"],
        "unknown": ["place_order"],
        "unreachable": ["place_order"],
    }
    bulk = seen["bulk"]
    assert bulk["offered"][1] == ["list_stock"]
    assert bulk["observations"][1] == {"ok": False, "error": "tool_not_allowed"}
    assert bulk["narrowings"][0]["ignored"] == ["place_order"]
    assert bulk["refused"] == [["place_order", "tool_not_allowed"]]
    assert seen["missing"]["error"] == "no such skills folder"
    # Lucy's three lines in 200 characters: every name whole, each description cut and marked.
    assert len(seen["catalogue"]) == 200
    assert [line.split(":")[0] for line in seen["catalogue"].split("\n")] == [
        "- bulk-buyer",
        "- morning-reorder",
        "- price-check",
    ]
    assert all(line.endswith("\u2026") for line in seen["catalogue"].split("\n"))


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        (
            "unit_a",
            [
                "{'skill': 'counting', 'lists': ['list_stok'], 'keeps': [], 'removes': "
                "['list_stock', 'load_skill'], 'ignores': ['list_stok'], 'unknown': "
                "['list_stok'], 'unreachable': ['list_stock']}",
                "bulk-buyer unreachable: ['place_order']",
                "price-check unreachable: []",
                "['list_stock']",
            ],
        ),
        (
            "unit_b",
            [
                "['tool_failed']",
                "['ok', 'ok']",
                "['ok', 'invalid_arguments']",
                "{'error': 'tool_not_allowed', 'ok': False}",
            ],
        ),
        (
            "unit_c",
            [
                "2356 characters",
                "750 characters",
                "acme-bulk-deals cut 187",
                "acme-loyalty cut 184",
                "bulk-buyer whole 108",
                "morning-reorder whole 150",
                "price-check whole 117",
                "True",
                "refused: ValueError",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    lines = check_cell_lines(tmp_path, BOOK, "skill_tools.py", SOLUTION, unit, "unit_*_skills")
    for line in with_the_solution:
        assert line in lines, line


def test_pyyaml_is_importable_inside_the_graders_sandbox(tmp_path: Path) -> None:
    # Chapter 7's module needs PyYAML (the `skills` extra): the sandbox must hold it.
    require_executable("bwrap", install="sudo apt-get install bubblewrap")
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "probe.py").write_text(
        "import yaml\n\n\ndef load(text):\n    return yaml.safe_load(text)\n", encoding="utf-8"
    )
    copy = tmp_path / "copy"
    assert copy_submission(folder, copy, ["probe.py"]) is None
    session = Session(copy, "probe", Isolation.BUBBLEWRAP, Limits(timeout=30), 2)
    try:
        session.imported()
        answer = session.ask(dict(call("load", "tools: [list_stock]").op))
    finally:
        session.close()
    assert answer.value == {"tools": ["list_stock"]}
