"""Reading SKILL.md: safe YAML made stricter, a Pydantic model, and every mistake with its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.skills import (
    MAX_YAML_DEPTH,
    Skill,
    SkillError,
    parse_skill,
    read_front_matter,
)

ROOT = REPO_ROOT
PATH = Path("skills/stock-check/SKILL.md")
BODY = "# Stock check\n\nCall `list_stock` and say what is low.\n"


def skill_text(*front: str, body: str = BODY) -> str:
    return "\n".join(["---", *front, "---", body])


def refusal(text: str) -> SkillError:
    with pytest.raises(SkillError) as caught:
        parse_skill(PATH, text)
    return caught.value


GOOD = ("name: stock-check", "description: Say which products are low.")


def test_a_skill_keeps_its_name_description_tools_and_instructions() -> None:
    skill = parse_skill(PATH, skill_text(*GOOD, "allowed-tools: list_stock"))
    assert skill == Skill(
        name="stock-check",
        description="Say which products are low.",
        allowed_tools=frozenset({"list_stock"}),
        instructions=BODY.strip(),
        path=PATH,
    )


@pytest.mark.parametrize(
    "written",
    [
        "allowed-tools: list_stock supplier",
        "allowed-tools: list_stock, supplier",
        "allowed-tools: list_stock,supplier",
        "allowed-tools: [list_stock, supplier]",
        "allowed-tools:\n  - list_stock\n  - supplier",
    ],
)
def test_allowed_tools_may_be_one_line_or_a_list(written: str) -> None:
    skill = parse_skill(PATH, skill_text(*GOOD, written))
    assert skill.allowed_tools == frozenset({"list_stock", "supplier"})


def test_a_skill_without_allowed_tools_lists_none_and_an_empty_list_lists_no_tool() -> None:
    assert parse_skill(PATH, skill_text(*GOOD)).allowed_tools is None
    assert parse_skill(PATH, skill_text(*GOOD, "allowed-tools: []")).allowed_tools == frozenset()


def test_every_value_stays_the_text_that_was_written() -> None:
    # YAML 1.1 would read these as False, a float, a date, None and 8; the model
    # takes text only, so parsing at all proves each one stayed text.
    skill = parse_skill(
        PATH,
        skill_text(
            "name: stock-check",
            "description: no",
            "license: 1e3",
            "compatibility: 2024-05-01",
            "metadata:\n  reviewed: null\n  version: 010",
        ),
    )
    assert skill.description == "no"


def test_the_fixture_skills_parse_as_the_chapter_describes_them() -> None:
    folder = ROOT / "book/textbook/skills"
    bulk = parse_skill(folder / "bulk-buyer/SKILL.md", (folder / "bulk-buyer/SKILL.md").read_text())
    assert bulk.allowed_tools == frozenset({"list_stock", "place_order"})
    morning = folder / "morning-reorder/SKILL.md"
    assert parse_skill(morning, morning.read_text()).allowed_tools == frozenset(
        {"list_stock", "draft_order"}
    )


def test_a_python_object_tag_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    error = refusal(
        skill_text(*GOOD, f"license: !!python/object/apply:os.system ['touch {marker}']")
    )
    assert (error.line, marker.exists()) == (4, False)
    assert "tags are not allowed" in error.reason
    assert "python/object/apply:os.system" in error.reason


@pytest.mark.parametrize(
    "tagged",
    [
        "license: !!str MIT",
        "license: !!int 5",
        "license: !local x",
        "license: ! x",
        "metadata: !!map {}",
    ],
)
def test_every_tag_is_refused_with_its_line(tagged: str) -> None:
    error = refusal(skill_text(*GOOD, tagged))
    assert error.line == 4
    assert error.reason.startswith("YAML: tags are not allowed")


def test_an_alias_bomb_is_refused_at_its_first_anchor() -> None:
    bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    bomb += [
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)
    ]
    error = refusal(skill_text(*GOOD, "metadata:", *("  " + line for line in bomb)))
    assert (error.line, error.reason) == (5, "YAML: anchors and aliases (& and *) are not allowed")


def test_an_alias_of_a_plain_value_is_refused_too() -> None:
    error = refusal(skill_text("name: &n stock-check", "description: *n"))
    assert (error.line, error.reason) == (2, "YAML: anchors and aliases (& and *) are not allowed")


def test_a_key_written_twice_is_refused_at_the_second() -> None:
    error = refusal(
        skill_text(*GOOD, "allowed-tools: list_stock", "license: MIT", "allowed-tools: place_order")
    )
    assert (error.line, error.reason) == (6, "YAML: the key 'allowed-tools' is written twice")


def test_deep_nesting_is_refused_without_recursing() -> None:
    deep = "[" * 50_000 + "]" * 50_000
    error = refusal(skill_text(*GOOD, f"metadata: {deep}"))
    assert (error.line, error.reason) == (4, f"YAML: nested deeper than {MAX_YAML_DEPTH} levels")


def test_a_value_nested_one_level_too_deep_for_the_model_names_its_field() -> None:
    error = refusal(skill_text(*GOOD, "metadata:", "  authors: [lucy, sam]"))
    assert (error.line, error.reason) == (5, "metadata.authors: Input should be a valid string")


def test_an_unknown_key_is_refused_on_its_own_line() -> None:
    error = refusal(skill_text(*GOOD, "allowed_tools: list_stock"))
    assert (error.line, error.reason) == (4, "allowed_tools: Extra inputs are not permitted")


def test_a_bad_tool_name_in_a_list_is_refused_on_the_item_line() -> None:
    error = refusal(skill_text(*GOOD, "allowed-tools:", "  - list_stock", "  - Bash(rm:*)"))
    assert error.line == 6
    assert error.reason.startswith("allowed-tools.1: String should match pattern")


def test_a_missing_description_points_at_the_end_of_the_front_matter() -> None:
    error = refusal(skill_text("name: stock-check"))
    assert (error.line, error.reason) == (3, "description: Field required")


@pytest.mark.parametrize(
    ("front", "line", "reason"),
    [
        (("name: Stock-Check", GOOD[1]), 2, "name: String should match pattern"),
        (("name: weekly-count", GOOD[1]), 2, "name 'weekly-count' differs from its folder's name"),
        ((GOOD[0], "description: '   '"), 3, "description: String should match pattern"),
        (("- name", "- description"), 2, "the front matter must be a mapping of keys to values"),
        ((), 2, "the front matter must be a mapping of keys to values"),
        ((*GOOD, "license: [a"), 4, "YAML: expected ',' or ']'"),
    ],
)
def test_front_matter_mistakes_name_their_line(
    front: tuple[str, ...], line: int, reason: str
) -> None:
    error = refusal(skill_text(*front))
    assert error.line == line
    assert error.reason.startswith(reason)
    assert str(error).startswith(f"{PATH}, line {line}: ")


def test_a_file_without_front_matter_or_without_its_end_is_refused_on_line_1() -> None:
    assert refusal("# Stock check\n").line == 1
    assert refusal("---\nname: stock-check\n").reason.startswith("the front matter is never closed")


def test_a_skill_with_no_instructions_is_refused_at_the_closing_line() -> None:
    error = refusal(skill_text(*GOOD, body="\n\n"))
    assert (error.line, error.reason) == (4, "no instructions follow the front matter")


def test_a_control_character_in_the_front_matter_is_refused_with_its_line() -> None:
    error = refusal(skill_text(*GOOD, "license: MIT\x07"))
    assert error.line == 4
    assert "is not allowed" in error.reason


def test_the_front_matter_may_follow_a_byte_order_mark_and_use_windows_line_ends() -> None:
    text = "\ufeff" + skill_text(*GOOD).replace("\n", "\r\n")
    assert read_front_matter(PATH, text)[1] == 4
    assert parse_skill(PATH, text).name == "stock-check"


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=400))
def test_any_front_matter_is_a_skill_or_a_skill_error_with_a_line_inside_it(front: str) -> None:
    text = skill_text(front)
    try:
        parse_skill(PATH, text)
    except SkillError as error:
        assert error.line is not None
        assert 1 <= error.line <= len(text.splitlines())


yaml_pieces = st.sampled_from(
    [
        "name: stock-check",
        "description: Low stock.",
        "allowed-tools: list_stock",
        "allowed-tools: [a, b]",
        "metadata:",
        "  k: v",
        "  - x",
        "a: &x [1]",
        "b: *x",
        "c: !!python/object:os.system x",
        "d: {e: {f: [g]}}",
        "'q': \"r\"",
        "? [k]",
        ": v",
        "  ",
        "description: |",
        "  more text",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(yaml_pieces, max_size=10))
def test_near_valid_front_matter_is_a_skill_or_a_skill_error(front: list[str]) -> None:
    try:
        skill = parse_skill(PATH, skill_text(*front))
    except SkillError as error:
        assert error.line is not None
    else:
        assert skill.name == "stock-check"
        assert all(isinstance(name, str) for name in skill.allowed_tools or ())
