"""Exercise 1: a review says what loading each skill would do, and loads nothing.

Every skills folder is written here, in pytest's `tmp_path`, and every expected
list is written out by hand. The review is asked for through the grader's
door, `review_folder`, which builds the run's dispatcher from the list given.
"""

from pathlib import Path

import pytest
from skill_tools import review_folder, skills_in_folder

RUN = ["draft_order", "list_stock", "load_skill", "supplier"]


def write_skill(root: Path, name: str, front: str, steps: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    text = f"---\nname: {name}\ndescription: The {name} skill.\n{front}---\n{steps}\n"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(
        root, "bulk-buyer", "allowed-tools: list_stock place_order\n", "Call `place_order`."
    )
    write_skill(root, "counting", "allowed-tools: list_stok\n", "Call `list_stock`, then `needed`.")
    write_skill(root, "pricing", "allowed-tools: [list_stock, supplier]\n", "Call `supplier`.")
    write_skill(root, "talking", "", "Just answer, calling `draft_order` if asked.")
    return root


def review(root: Path, allowed: list[str]) -> dict[str, dict]:
    return {entry["skill"]: entry for entry in review_folder(str(root), allowed)}


def test_a_skill_keeps_only_what_the_run_allowed_and_it_lists(skills: Path) -> None:
    bulk = review(skills, RUN)["bulk-buyer"]
    assert bulk["lists"] == ["list_stock", "place_order"]
    assert bulk["keeps"] == ["list_stock"]
    assert bulk["removes"] == ["draft_order", "load_skill", "supplier"]
    assert bulk["ignores"] == ["place_order"]


def test_a_narrower_run_keeps_less_and_ignores_more(skills: Path) -> None:
    pricing = review(skills, ["list_stock", "load_skill"])["pricing"]
    assert (pricing["keeps"], pricing["removes"], pricing["ignores"]) == (
        ["list_stock"],
        ["load_skill"],
        ["supplier"],
    )


def test_a_name_the_run_allows_but_no_tool_has_is_never_kept(skills: Path) -> None:
    bulk = review(skills, [*RUN, "place_order"])["bulk-buyer"]
    assert bulk["keeps"] == ["list_stock"]
    assert bulk["ignores"] == ["place_order"]


def test_a_name_no_tool_has_is_unknown_and_ignored(skills: Path) -> None:
    counting = review(skills, RUN)["counting"]
    assert counting["unknown"] == ["list_stok"]
    assert counting["ignores"] == ["list_stok"]
    assert counting["keeps"] == []


def test_a_registered_name_the_run_forbids_is_ignored_but_not_unknown(skills: Path) -> None:
    pricing = review(skills, ["list_stock", "load_skill"])["pricing"]
    assert (pricing["ignores"], pricing["unknown"]) == (["supplier"], [])


def test_steps_that_call_a_tool_the_skill_would_lose_are_unreachable(skills: Path) -> None:
    reviews = review(skills, RUN)
    assert reviews["counting"]["unreachable"] == ["list_stock"]
    assert reviews["bulk-buyer"]["unreachable"] == ["place_order"]
    assert reviews["pricing"]["unreachable"] == []


def test_a_skill_that_lists_nothing_keeps_the_run_as_it_is(skills: Path) -> None:
    talking = review(skills, RUN)["talking"]
    assert talking["lists"] is None
    assert talking["keeps"] == RUN
    assert talking["removes"] == talking["ignores"] == talking["unreachable"] == []


def test_every_skill_is_reviewed_once_in_order_of_name(skills: Path) -> None:
    reviews = review_folder(str(skills), RUN)
    assert [entry["skill"] for entry in reviews] == ["bulk-buyer", "counting", "pricing", "talking"]


def test_a_malformed_folder_is_refused_before_any_review(skills: Path) -> None:
    write_skill(skills, "typo", "allowed_tools: list_stock\n", "Call `list_stock`.")
    refused = review_folder(str(skills), RUN)
    assert refused["line"] == 4
    assert refused["path"] == str(skills / "typo" / "SKILL.md")
    assert skills_in_folder(str(skills))["line"] == 4
