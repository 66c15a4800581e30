"""Finding skills on disk: one folder each, nothing that leads outside the skills folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bookproof.layout import REPO_ROOT
from sovereign_agent.skills import (
    MAX_SKILL_BYTES,
    MAX_SKILLS,
    SkillError,
    build_skill_tools,
    discover_skills,
)

ROOT = REPO_ROOT
FIXTURE = ROOT / "book/textbook/skills"
MALFORMED = ROOT / "book/textbook/skills-malformed"
SHOP = {"products": [{"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8}]}


def write_skill(root: Path, name: str, *front: str, body: str = "Call `list_stock`.") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    lines = ["---", f"name: {name}", f"description: The {name} skill.", *front, "---", body]
    (folder / "SKILL.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def refusal(root: Path) -> SkillError:
    with pytest.raises(SkillError) as caught:
        discover_skills(root)
    return caught.value


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root, "stock-check", "allowed-tools: list_stock")
    return root


def test_the_fixture_skills_are_found_in_name_order() -> None:
    found = discover_skills(FIXTURE)
    assert [skill.name for skill in found] == ["bulk-buyer", "morning-reorder", "price-check"]
    assert found[0].path == FIXTURE / "bulk-buyer/SKILL.md"


def test_the_malformed_fixture_fails_with_its_file_and_line() -> None:
    error = refusal(MALFORMED)
    assert (error.path, error.line) == (MALFORMED / "weekly-count/SKILL.md", 4)
    assert error.reason == "allowed_tools: Extra inputs are not permitted"


def test_files_and_hidden_entries_beside_the_skills_are_passed_over(skills: Path) -> None:
    (skills / "README.md").write_text("Lucy's skills.\n", encoding="utf-8")
    (skills / ".git").mkdir()
    assert [skill.name for skill in discover_skills(skills)] == ["stock-check"]


def test_a_folder_without_skill_md_is_refused(skills: Path) -> None:
    (skills / "notes").mkdir()
    error = refusal(skills)
    assert (error.path, error.line, error.reason) == (
        skills / "notes",
        None,
        "no SKILL.md in this folder",
    )


def test_a_folder_not_named_like_a_skill_is_refused(skills: Path) -> None:
    (skills / "Stock Check").mkdir()
    assert refusal(skills).reason.startswith("a skill's folder is named like a skill")


def test_a_missing_skills_folder_and_a_file_instead_of_one_are_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path / "absent").reason == "no such skills folder"
    (tmp_path / "file").write_text("", encoding="utf-8")
    assert refusal(tmp_path / "file").reason == "not a folder"


def test_a_skill_folder_that_links_outside_the_skills_folder_is_refused(
    skills: Path, tmp_path: Path
) -> None:
    elsewhere = write_skill(tmp_path / "elsewhere", "bulk-buyer")
    (skills / "bulk-buyer").symlink_to(elsewhere, target_is_directory=True)
    error = refusal(skills)
    assert (error.path, error.reason) == (
        skills / "bulk-buyer",
        "a link that leads outside the skills folder",
    )


def test_skill_md_linked_to_a_file_outside_is_refused(skills: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("---\nname: x\n---\nsecret-token-3f1c\n", encoding="utf-8")
    folder = skills / "leaky"
    folder.mkdir()
    (folder / "SKILL.md").symlink_to(outside)
    error = refusal(skills)
    assert (error.path, error.reason) == (
        folder / "SKILL.md",
        "a link that leads outside the skills folder",
    )
    assert "secret-token" not in str(error)


def test_a_link_anywhere_inside_a_skill_that_leads_out_is_refused(skills: Path) -> None:
    references = skills / "stock-check/references"
    references.mkdir()
    (references / "passwd.md").symlink_to("/etc/passwd")
    error = refusal(skills)
    assert (error.path, error.reason) == (
        references / "passwd.md",
        "a link that leads outside the skills folder",
    )


def test_a_dangling_link_and_a_link_climbing_out_by_dots_are_refused(skills: Path) -> None:
    (skills / "stock-check/up").symlink_to("../../../../..")
    assert refusal(skills).reason == "a link that leads outside the skills folder"
    (skills / "stock-check/up").unlink()
    (skills / "stock-check/gone").symlink_to("/nonexistent/place")
    assert refusal(skills).reason == "a link that leads outside the skills folder"


def test_links_that_stay_inside_the_skills_folder_are_accepted(skills: Path) -> None:
    shared = skills / ".shared"
    shared.mkdir()
    (shared / "style.md").write_text("Be brief.\n", encoding="utf-8")
    (skills / "stock-check/style.md").symlink_to("../.shared/style.md")
    write_skill(skills, "price-check")
    (skills / "price-check/style.md").symlink_to("../.shared/style.md")
    assert [skill.name for skill in discover_skills(skills)] == ["price-check", "stock-check"]


def test_a_skill_md_that_is_a_link_is_refused_even_when_it_stays_inside(skills: Path) -> None:
    # Chapter 8: SKILL.md is opened by the descriptor walk, which follows no
    # link at all; a skill's other files may still share one inside the folder.
    (skills / ".shared").mkdir()
    (skills / ".shared/price.md").write_text(
        "---\nname: price-check\ndescription: Prices.\n---\nCall `supplier`.\n", encoding="utf-8"
    )
    (skills / "price-check").mkdir()
    (skills / "price-check/SKILL.md").symlink_to("../.shared/price.md")
    assert refusal(skills).reason == "a link; documents are read from plain files only"


def test_a_fifo_in_a_skill_is_refused_without_waiting_on_it(skills: Path) -> None:
    os.mkfifo(skills / "stock-check/pipe")
    assert refusal(skills).reason == "neither a file nor a folder"


def test_a_fifo_named_skill_md_is_refused_in_a_process_that_ends(skills: Path) -> None:
    (skills / "stock-check/SKILL.md").unlink()
    os.mkfifo(skills / "stock-check/SKILL.md")
    # In a child with a time limit: a read that waited for a writer would hang the suite.
    script = (
        "import sys; from pathlib import Path; from sovereign_agent.skills import *\n"
        "try: discover_skills(Path(sys.argv[1]))\n"
        "except SkillError as e: print(e.reason)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(skills)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout == "neither a file nor a folder\n"


def test_a_file_over_the_limit_is_refused_without_being_read(skills: Path) -> None:
    path = skills / "stock-check/SKILL.md"
    with path.open("r+b") as file:
        file.truncate(1 << 40)  # a terabyte, sparse: reading it would never end
    error = refusal(skills)
    assert (error.path, error.reason) == (
        path,
        f"larger than {MAX_SKILL_BYTES} bytes, a skill's limit",
    )


def test_a_file_just_at_the_limit_is_read(skills: Path) -> None:
    path = skills / "stock-check/SKILL.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "x" * (MAX_SKILL_BYTES - len(text.encode())), encoding="utf-8")
    assert len(discover_skills(skills)[0].instructions) > MAX_SKILL_BYTES - 200


def test_a_file_that_is_not_utf8_is_refused_with_its_line(skills: Path) -> None:
    path = skills / "stock-check/SKILL.md"
    path.write_bytes(path.read_bytes().replace(b"The stock", b"The \xff stock"))
    error = refusal(skills)
    assert (error.line, error.reason) == (3, "not UTF-8 text")


def test_too_many_skills_are_refused(tmp_path: Path) -> None:
    for number in range(MAX_SKILLS + 1):
        write_skill(tmp_path, f"skill-{number}")
    assert refusal(tmp_path).reason == f"{MAX_SKILLS + 1} skills; the limit is {MAX_SKILLS}"


def test_a_skill_too_long_for_one_observation_is_refused_when_the_tools_are_built(
    skills: Path,
) -> None:
    write_skill(skills, "long-story", body="word " * 4_000)
    with pytest.raises(SkillError) as caught:
        build_skill_tools(SHOP, skills_root=str(skills), provenance="shop")
    assert caught.value.path == skills / "long-story/SKILL.md"
    assert caught.value.reason == "too long to reach the model in one observation"


def test_a_copy_of_the_fixture_is_found_the_same_way(tmp_path: Path) -> None:
    copy = tmp_path / "skills"
    shutil.copytree(FIXTURE, copy)
    assert [s.allowed_tools for s in discover_skills(copy)] == [
        s.allowed_tools for s in discover_skills(FIXTURE)
    ]
