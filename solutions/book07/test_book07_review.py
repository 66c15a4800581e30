"""Exercise 1: a review says what loading each skill would do, and loads nothing."""

from pathlib import Path

import pytest
from skill_tools import SHOP, SkillError, build_reference_tools, discover_skills, review_skills

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
    tools = build_reference_tools(SHOP, skills_root=str(root), allowed=allowed)
    return {entry["skill"]: entry for entry in review_skills(discover_skills(root), tools)}


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


def test_reviewing_loads_nothing_and_narrows_nothing(skills: Path) -> None:
    tools = build_reference_tools(SHOP, skills_root=str(skills), allowed=RUN)
    before = set(tools.allowed)
    assert [entry["skill"] for entry in review_skills(discover_skills(skills), tools)] == [
        "bulk-buyer",
        "counting",
        "pricing",
        "talking",
    ]
    assert set(tools.allowed) == before


def test_a_malformed_folder_is_refused_before_any_review(skills: Path) -> None:
    write_skill(skills, "typo", "allowed_tools: list_stock\n", "Call `list_stock`.")
    with pytest.raises(SkillError) as caught:
        discover_skills(skills)
    assert caught.value.line == 4
