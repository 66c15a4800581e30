"""Exercise Book 8: graded through the real grader CLI, the reference scores full marks, the starter
earns its chapter baseline and no exercise point, each typical mistake loses exactly its checks,
tests that assert nothing earn nothing, and a listing that looks for the folder's description
anywhere but on the disk earns no more than one that follows links; the solution's own tests (in
tests/book/test_solution_tests.py) pass against it and fail against the starter, the grader's door
speaks plain JSON over real documents folders, and the notebooks match their plans.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from committed import EXERCISES
from exercise_books import check_cell_lines, hand_in, run_in
from grading import LEAK_HUNT, Graded, SharedGrades, edited, grade_batch

from bookproof.grade.books import load_book
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
BOOK = EXERCISES / "book08"
SOLUTIONS = ROOT / "solutions" / "book08"
SOLUTION = (SOLUTIONS / "document_tools.py").read_text(encoding="utf-8")
STARTER = (BOOK / "document_tools.py").read_text(encoding="utf-8")
DOCUMENTS = ROOT / "book" / "textbook" / "documents"


TESTS = {
    name: (SOLUTIONS / name).read_text(encoding="utf-8")
    for name in ("test_book08_listing.py", "test_book08_handles.py")
}
CHAPTER_CHECKS = {
    "ch8_reads_a_note",
    "ch8_refuses_escapes",
    "ch8_read_narrows",
    "ch8_refused_read_narrows_nothing",
}
UNIT_A = {
    "ex1_lists_notes",
    "ex1_passes_over",
    "ex1_bounded",
    "ex1_listing_narrows",
    "ex1_tests_catch_followed_links",
    "ex1_tests_catch_hidden_and_large",
    "ex1_tests_catch_never_narrows",
    "ex1_tests_catch_narrows_when_empty",
}
UNIT_B = {
    "ex2_open_gives_handles",
    "ex2_text_reaches_lucy_only",
    "ex2_keeps_drafting",
    "ex2_refusals",
    "ex2_runs_do_not_share",
    "ex2_tests_catch_text_to_the_model",
    "ex2_tests_catch_narrows_on_open",
    "ex2_tests_catch_shared_handles",
    "ex2_tests_catch_no_containment",
}
UNIT_C = {
    "ex3_reads_a_vendor_skill",
    "ex3_narrows_whatever_it_lists",
    "ex3_refuses_what_chapter_8_refuses",
}
UNIT_D = {"ex4_refunds_once", "ex4_no_refund_after_outside_text"}
HANDLES_BEHAVIOUR = {
    "ex2_open_gives_handles",
    "ex2_text_reaches_lucy_only",
    "ex2_keeps_drafting",
    "ex2_refusals",
    "ex2_runs_do_not_share",
}

# name -> (edits to the solution, the checks the result must fail). The tests
# handed in are the solution's own, which still pass against the reference:
# a mistake in the module loses behaviour checks only.
MISTAKES: dict[str, tuple[list[tuple[str, str]], set[str]]] = {
    # Following links lists a link out of the folder, and one to a note inside.
    "follows_links": (
        [("info = entry.stat(follow_symlinks=False)", "info = entry.stat()")],
        {"ex1_passes_over"},
    ),
    # No bound: a folder of sixty notes is listed whole.
    "no_bound": (
        [
            (
                "return listed[:MAX_LISTED], passed_over + max(0, len(listed) - MAX_LISTED)",
                "return listed, passed_over",
            )
        ],
        {"ex1_bounded"},
    ),
    # A listing that never narrows hands a run that can draft the supplier's file names.
    "listing_never_narrows": (
        [
            (
                'return Narrow(value, keep=keep, reason="untrusted text: the names of the notes")',
                "return value",
            )
        ],
        {"ex1_listing_narrows"},
    ),
    # Handing the model the text along with the handle undoes the exercise.
    "text_to_the_model": (
        [
            (
                '"bytes": len(text.encode())}',
                '"bytes": len(text.encode()), "text": text}',
            )
        ],
        HANDLES_BEHAVIOUR,
    ),
    # The naive reader of chapter 7: join the path and open it, links and all.
    "vendor_skill_follows_links": (
        [
            (
                "skill = read_skill(skills_root / arguments.skill, skills_root)",
                "skill = parse_skill(skills_root / arguments.skill / 'SKILL.md', "
                "(skills_root / arguments.skill / 'SKILL.md').read_text(encoding='utf-8'))",
            ),
            (
                "from sovereign_agent.skills import read_skill",
                "from sovereign_agent.skills import parse_skill, read_skill",
            ),
        ],
        {"ex3_refuses_what_chapter_8_refuses"},
    ),
    # Chapter 7's rule: narrow to what the skill lists; a skill listing draft_order keeps it.
    "vendor_skill_narrows_to_what_it_lists": (
        [
            (
                '            keep=keep,\n            reason=f"outside skill {skill.name}",',
                "            keep=keep if skill.allowed_tools is None else skill.allowed_tools,"
                "\n"
                '            reason=f"outside skill {skill.name}",',
            )
        ],
        {"ex3_narrows_whatever_it_lists"},
    ),
    # Checking the amount but not whether the sale was paid back already.
    "refund_pays_twice": (
        [
            (
                '        if any(paid["sale"] == arguments.sale for paid in refunds):\n'
                '            raise ValueError(f"{arguments.sale} was refunded already")\n',
                "",
            )
        ],
        {"ex4_refunds_once", "ex4_no_refund_after_outside_text"},
    ),
    # "The note says Lucy approved it": a refund kept beside outside text.
    "refund_kept_after_reading": (
        [
            (
                "KEPT_AFTER_READING = READS_ONLY | "
                "{LIST_DOCUMENTS, OPEN_DOCUMENT, READ_VENDOR_SKILL}",
                "KEPT_AFTER_READING = READS_ONLY | {\n"
                "    LIST_DOCUMENTS, OPEN_DOCUMENT, READ_VENDOR_SKILL, REFUND_CUSTOMER\n}",
            )
        ],
        {"ex4_no_refund_after_outside_text"},
    ),
}


# Tests that run the tools and assert nothing: they pass everywhere, so they catch nothing.
SILENT_TESTS = {
    name: (
        "from document_tools import EVERY_TOOL, run_calls\n\n\n"
        "def test_a_run_runs(tmp_path):\n"
        "    run_calls(str(tmp_path), list(EVERY_TOOL), [['list_documents', {}]])\n"
    )
    for name in TESTS
}

# The reference, except that its listing takes what each entry is from
# anywhere but the disk: a description the grader once handed to the door
# (the old `write_folder`), the grader's memory, command line or files beside
# the folder; and when none of them says, it follows links. Nothing of a folder
# arrives but the folder, so it earns exactly what following links earns.
HOSTILE = (
    edited(SOLUTION, MISTAKES["follows_links"][0])
    + LEAK_HUNT
    + """

DESCRIBED = {}
followed_links = listed_notes


def write_folder(entries, outside=None):
    DESCRIBED["last"] = entries
    return "/nowhere"


def listed_notes(root):
    described = DESCRIBED.get("last")
    if described is None:
        for text in everything_but_the_files(str(root)):
            if '"fifo"' in text and text.lstrip().startswith("{"):
                try:
                    described = json.loads(text)
                except ValueError:
                    pass
    if described is None:
        return followed_links(root)
    notes = [
        {"name": name, "bytes": len(entry.encode())}
        for name, entry in described.items()
        if isinstance(entry, str) and not name.startswith(".")
    ]
    notes.sort(key=lambda note: note["name"])
    return notes[:MAX_LISTED], len(described) - len(notes[:MAX_LISTED])
"""
)


@pytest.fixture(scope="module")
def report(
    tmp_path_factory: pytest.TempPathFactory, shared_grades: SharedGrades
) -> dict[str, Graded]:
    base = tmp_path_factory.mktemp("book08")
    folders = {"starter": {"document_tools.py": STARTER}}
    folders["silent_tests"] = {"document_tools.py": SOLUTION, **SILENT_TESTS}
    folders["hostile"] = {"document_tools.py": HOSTILE, **TESTS}
    for name, (edits, _) in MISTAKES.items():
        folders[name] = {"document_tools.py": edited(SOLUTION, edits), **TESTS}
    return grade_batch(8, folders, base=base, shared=shared_grades)


def test_the_grader_declares_exactly_the_books_checks() -> None:
    # The ids are the gradebook's columns: written out here, a renamed one is seen.
    assert {check.id for check in load_book(8).checks} == (
        CHAPTER_CHECKS | UNIT_A | UNIT_B | UNIT_C | UNIT_D
    )


def test_the_untouched_starter_holds_back_the_checks_its_exercises_guard(
    report: dict[str, Graded],
) -> None:
    starter = report["starter"]
    assert starter.baseline == (6, 6)
    assert starter.exercises[0] == 0
    assert starter.failed == UNIT_A | UNIT_B | UNIT_C | UNIT_D


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_loses_exactly_its_checks(report: dict[str, Graded], mistake: str) -> None:
    assert report[mistake].failed == MISTAKES[mistake][1]


def test_tests_that_assert_nothing_catch_nothing(report: dict[str, Graded]) -> None:
    assert report["silent_tests"].failed == {
        check for check in UNIT_A | UNIT_B if "_tests_catch_" in check
    }


def test_a_listing_from_anywhere_but_the_disk_earns_only_what_following_links_earns(
    report: dict[str, Graded],
) -> None:
    assert report["hostile"].failed == report["follows_links"].failed == {"ex1_passes_over"}


DOOR_SCRIPT = """
import json, sys
import document_tools as d
root = sys.argv[1]
run = list(d.EVERY_TOOL)
draft = ["draft_order", {"sku": "SKU-VANILLA", "quantity": 6}]
seen = {
    "listed": d.run_calls(root, run, [["list_documents", {}], draft]),
    "handled": d.run_calls(root, run, [["open_document", {"name": "vanilla-offer.md"}],
                                       ["show_lucy", {"handle": "doc-1"}], draft]),
    "read": d.run_calls(root, run, [["read_document", {"name": "vanilla-offer.md"}], draft]),
    "missing": d.run_calls(root + "/nowhere", run, []),
}
print(json.dumps(seen, sort_keys=True))
"""


def test_the_grader_door_answers_in_plain_json_over_real_folders(tmp_path: Path) -> None:
    folder = hand_in(tmp_path, SOLUTIONS, "document_tools.py", SOLUTION)
    result = run_in(folder, "-c", DOOR_SCRIPT, str(DOCUMENTS))
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    listed = seen["listed"]
    assert listed["observations"][0]["value"]["documents"] == [
        {"name": "strawberry-price.md", "bytes": 264},
        {"name": "vanilla-offer.md", "bytes": 566},
    ]
    assert listed["refused"] == [["draft_order", "tool_not_allowed"]]
    handled = seen["handled"]
    assert handled["narrowings"] == []
    assert handled["executed"] == ["open_document", "show_lucy", "draft_order"]
    assert handled["for_lucy"][0]["text"] == (DOCUMENTS / "vanilla-offer.md").read_text("utf-8")
    assert "approval is granted" not in json.dumps(handled["observations"])
    read = seen["read"]
    assert read["narrowings"][0]["removed"] == ["draft_order", "show_lucy"]
    assert read["refused"] == [["draft_order", "tool_not_allowed"]]
    assert seen["missing"] == {"error": "no such documents folder"}


@pytest.mark.parametrize(
    ("unit", "with_the_solution"),
    [
        (
            "unit_a",
            [
                "[{'bytes': 264, 'name': 'strawberry-price.md'}, "
                "{'bytes': 566, 'name': 'vanilla-offer.md'}]",
                "passed over: 7",
                "secret shown: False",
                "bossy [['draft_order', 'show_lucy']] [['draft_order', 'tool_not_allowed']]",
                "quiet [] []",
            ],
        ),
        (
            "unit_b",
            [
                "[{'bytes': 566, 'document': 'vanilla-offer.md', 'handle': 'doc-1'}, "
                "'tool_failed', {'bytes': 264, 'document': 'strawberry-price.md', "
                "'handle': 'doc-2'}, 'tool_failed']",
                "narrowings: []",
                "for Lucy: ['vanilla-offer.md', 'strawberry-price.md']",
                "the model read the instruction: False",
            ],
        ),
        (
            "unit_c",
            [
                "['ok', 'ok', 'tool_not_allowed', 'ok']",
                "[('outside skill bulk-buyer', ['draft_order', 'show_lucy'])]",
                "['untrusted:']",
                "[{'error': 'tool_failed', 'ok': False}] []",
                "secret shown: False",
            ],
        ),
        (
            "unit_d",
            [
                "['ok', 'tool_failed', 'tool_failed', 'tool_failed'] "
                "[{'sale': 'S-2040', 'pence': 500}]",
                "read: ['ok', 'tool_not_allowed'] []",
                "by handle: ['ok', 'ok', 'ok'] [{'sale': 'S-2041', 'pence': 750}]",
            ],
        ),
    ],
)
def test_the_check_cells_show_the_exercises_done_with_the_solution(
    tmp_path: Path, unit: str, with_the_solution: list[str]
) -> None:
    lines = check_cell_lines(
        tmp_path, BOOK, "document_tools.py", SOLUTION, unit, "unit_*_notes", "unit_*_skills"
    )
    for line in with_the_solution:
        assert line in lines, line
