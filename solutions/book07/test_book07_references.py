"""Exercise 2: a skill's references are listed when it loads, and read only from a loaded skill."""

import json
from pathlib import Path

import pytest
from skill_tools import run_calls

RUN = ["draft_order", "list_stock", "load_skill", "read_reference", "supplier"]


def write_skill(root: Path, name: str, tools: str, references: dict[str, str]) -> None:
    folder = root / name
    (folder / "references").mkdir(parents=True)
    text = f"---\nname: {name}\ndescription: The {name} skill.\n{tools}---\nRead the notes.\n"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    for reference, body in references.items():
        (folder / "references" / reference).write_text(body, encoding="utf-8")


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(
        root,
        "price-notes",
        "allowed-tools: list_stock read_reference\n",
        {"summer.md": "Vanilla sells twice as fast in July.\n", "notes.txt": "not a reference"},
    )
    write_skill(root, "no-notes", "allowed-tools: list_stock\n", {"hidden.md": "secret\n"})
    return root


def read(skill: str, name: str) -> list:
    return ["read_reference", {"skill": skill, "name": name}]


def load(skill: str) -> list:
    return ["load_skill", {"skill": skill}]


def test_loading_a_skill_lists_its_references(skills: Path) -> None:
    seen = run_calls(str(skills), RUN, [load("price-notes")])
    assert seen["observations"][0]["value"]["references"] == ["summer.md"]


def test_a_reference_of_a_loaded_skill_is_read(skills: Path) -> None:
    seen = run_calls(str(skills), RUN, [load("price-notes"), read("price-notes", "summer.md")])
    assert seen["observations"][1] == {
        "ok": True,
        "value": {
            "reference": "summer.md",
            "skill": "price-notes",
            "text": "Vanilla sells twice as fast in July.\n",
        },
    }


def test_a_reference_before_its_skill_is_loaded_is_refused(skills: Path) -> None:
    seen = run_calls(str(skills), RUN, [read("price-notes", "summer.md")])
    assert seen["observations"][0] == {"ok": False, "error": "tool_failed"}


def test_a_reference_of_another_skill_is_refused(skills: Path) -> None:
    seen = run_calls(str(skills), RUN, [load("price-notes"), read("no-notes", "hidden.md")])
    assert seen["observations"][1] == {"ok": False, "error": "tool_failed"}


@pytest.mark.parametrize("name", ["../SKILL.md", "/etc/passwd", "notes.txt", "references/a.md"])
def test_a_name_that_is_not_a_plain_reference_never_reaches_the_disk(
    skills: Path, name: str
) -> None:
    seen = run_calls(str(skills), RUN, [load("price-notes"), read("price-notes", name)])
    assert seen["observations"][1] == {"ok": False, "error": "invalid_arguments"}


def test_an_unknown_reference_is_refused(skills: Path) -> None:
    seen = run_calls(str(skills), RUN, [load("price-notes"), read("price-notes", "winter.md")])
    assert seen["observations"][1] == {"ok": False, "error": "tool_failed"}


def test_a_skill_that_does_not_list_read_reference_takes_it_away(skills: Path) -> None:
    seen = run_calls(str(skills), RUN, [load("no-notes"), read("no-notes", "hidden.md")])
    assert seen["observations"][0]["value"]["references"] == ["hidden.md"]
    assert seen["observations"][1] == {"ok": False, "error": "tool_not_allowed"}
    assert seen["narrowings"][0]["removed"] == [
        "draft_order",
        "load_skill",
        "read_reference",
        "supplier",
    ]


def test_a_reference_too_large_for_one_observation_is_refused(skills: Path) -> None:
    big = skills / "price-notes" / "references" / "huge.md"
    big.write_text("x" * 9_000, encoding="utf-8")
    seen = run_calls(str(skills), RUN, [load("price-notes"), read("price-notes", "huge.md")])
    assert seen["observations"][1] == {"ok": False, "error": "tool_failed"}
    assert "x" * 100 not in json.dumps(seen)
