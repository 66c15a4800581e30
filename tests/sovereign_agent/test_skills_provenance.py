"""Skills from outside the shop: untrusted text that narrows a run, read in one look at the disk.

Each test performs an attack that worked before skills had a provenance and
before SKILL.md was opened by chapter 8's descriptor walk: a vendor's skill
with no `allowed-tools` leading a run that can buy into a purchase; a
SKILL.md swapped for a link while it is read; a hard link to a private file;
a skill carrying characters Lucy cannot see.
"""

from __future__ import annotations

import json
import os
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strength import examples

from bookproof.layout import REPO_ROOT
from sovereign_agent.documents import DocumentError, invisible_in, read_document_text
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.shop import DraftArguments, build_tools
from sovereign_agent.skills import (
    LOAD_SKILL,
    OUTSIDE_SKILL_KEEPS,
    Skill,
    SkillError,
    build_skill_tools,
    discover_skills,
    load_skill_tool,
)
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.trace import Recorder

ROOT = REPO_ROOT
BULK_BUYER = ROOT / "book/textbook/skills/bulk-buyer/SKILL.md"
SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}
SECRET = "secret-token-lucy-bank-login"
# Every tool name a skill could ask for, the writing ones included.
NAMES = ("draft_order", "list_stock", "load_skill", "place_order", "supplier")


def ask(call_id: str, tool: str, /, **arguments: Any) -> AssistantToolCall:
    return AssistantToolCall(id=call_id, name=tool, arguments_json=json.dumps(arguments))


def approve_everything(call: ToolCall) -> None:
    """The weakest write authority: whatever stops a purchase, it is not this."""


def vendor_folder(root: Path) -> Path:
    """The book's bulk-buyer, with its `allowed-tools` line taken out, alone in a folder."""
    text = BULK_BUYER.read_text(encoding="utf-8")
    stripped = "".join(
        line for line in text.splitlines(keepends=True) if not line.startswith("allowed-tools")
    )
    assert stripped != text
    (root / "bulk-buyer").mkdir(parents=True)
    (root / "bulk-buyer/SKILL.md").write_text(stripped, encoding="utf-8")
    return root


def can_buy(skills: tuple[Skill, ...], purchases: list[str], **provenance: Any) -> Dispatcher:
    """Lucy's tools, load_skill and place_order, all allowed, with an authority that approves."""
    place_order = ExecutableTool(
        name="place_order",
        description="Place a real order with the supplier.",
        arguments=DraftArguments,
        handler=lambda args: purchases.append(f"{args.quantity} tubs of {args.sku}"),
        consequential=True,
    )
    shop = build_tools(SHOP)
    tools = [*shop.tools.values(), place_order, load_skill_tool(skills, **provenance)]
    return Dispatcher(tools, allowed=[tool.name for tool in tools], before_write=approve_everything)


BUY_AS_TOLD = (
    AssistantMessage(tool_calls=(ask("c1", LOAD_SKILL, skill="bulk-buyer"),)),
    AssistantMessage(tool_calls=(ask("c2", "place_order", sku="SKU-VANILLA", quantity=500),)),
    AssistantMessage(content="The bulk order is placed."),
)


def test_the_vendor_skill_without_allowed_tools_buys_when_declared_the_shops_own(
    tmp_path: Path,
) -> None:
    # The control: chapter 7's rule alone. A skill listing no tools narrows
    # nothing, so the run that can buy does buy. This is the attack.
    skills = discover_skills(vendor_folder(tmp_path / "vendor"))
    assert skills[0].allowed_tools is None
    purchases: list[str] = []
    record = run_task(
        ScriptedModel(BUY_AS_TOLD),
        can_buy(skills, purchases, provenance="shop"),
        "Stock up: a heatwave is coming.",
        max_steps=4,
        max_tool_calls=4,
    )
    assert purchases == ["500 tubs of SKU-VANILLA"]
    assert record.narrowings == ()


def test_the_vendor_skill_is_stopped_by_default_and_the_narrowing_is_recorded(
    tmp_path: Path,
) -> None:
    skills = discover_skills(vendor_folder(tmp_path / "vendor"))
    purchases: list[str] = []
    events: list[dict[str, Any]] = []
    record = run_task(
        ScriptedModel(BUY_AS_TOLD),
        can_buy(skills, purchases),
        "Stock up: a heatwave is coming.",
        max_steps=4,
        max_tool_calls=4,
        recorder=Recorder(events.append),
    )
    assert purchases == []
    assert record.executed == (LOAD_SKILL,)
    assert record.refused == (("place_order", "tool_not_allowed"),)
    (narrowing,) = record.narrowings
    assert (narrowing.call_id, narrowing.tool) == ("c1", LOAD_SKILL)
    assert narrowing.reason == "outside skill bulk-buyer"
    assert narrowing.kept == ("list_stock", "load_skill", "supplier")
    assert narrowing.removed == ("draft_order", "place_order")
    narrowed = [event for event in events if event["event"] == "scope_narrowed"]
    assert len(narrowed) == 1
    assert narrowed[0]["reason"] == "outside skill bulk-buyer"
    assert narrowed[0]["removed"] == ["draft_order", "place_order"]


def test_an_outside_skill_that_lists_place_order_still_keeps_only_tools_that_change_nothing() -> (
    None
):
    # The book's bulk-buyer as written: it lists list_stock and place_order.
    skills = discover_skills(BULK_BUYER.parent.parent)
    purchases: list[str] = []
    record = run_task(
        ScriptedModel(BUY_AS_TOLD),
        can_buy(skills, purchases),
        "Stock up.",
        max_steps=4,
        max_tool_calls=4,
    )
    assert purchases == []
    (narrowing,) = record.narrowings
    assert narrowing.kept == ("list_stock",)
    assert "place_order" in narrowing.removed


def test_an_outside_catalogue_is_refused_in_a_run_that_can_change_anything(
    tmp_path: Path,
) -> None:
    vendor = str(vendor_folder(tmp_path / "vendor"))
    # The default: anything not declared the shop's own is outside, and the
    # default tools include draft_order.
    with pytest.raises(SkillError, match=r"allows draft_order$"):
        build_skill_tools(SHOP, skills_root=vendor)
    with pytest.raises(SkillError, match=r"allows draft_order, place_order$"):
        build_skill_tools(
            SHOP,
            skills_root=vendor,
            allowed=[*OUTSIDE_SKILL_KEEPS, "draft_order", "place_order"],
            before_write=approve_everything,
        )
    reading = build_skill_tools(SHOP, skills_root=vendor, allowed=OUTSIDE_SKILL_KEEPS)
    assert reading.allowed == OUTSIDE_SKILL_KEEPS
    description = reading.tools[LOAD_SKILL].description
    assert "come from outside the shop" in description
    assert reading.setup is not None
    assert reading.setup.arguments["provenance"] == "outside"
    # Declared the shop's own, the same folder may sit beside tools that write.
    own = build_skill_tools(SHOP, skills_root=vendor, provenance="shop")
    assert "draft_order" in own.allowed


def test_a_provenance_that_is_neither_is_refused(tmp_path: Path) -> None:
    vendor = str(vendor_folder(tmp_path / "vendor"))
    with pytest.raises(ValueError, match="provenance must be 'shop' or 'outside'"):
        build_skill_tools(SHOP, skills_root=vendor, provenance="lucy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="provenance must be"):
        load_skill_tool((), provenance="trusted")  # type: ignore[arg-type]


@settings(max_examples=examples(60), deadline=None)
@given(listed=st.none() | st.frozensets(st.sampled_from(NAMES)))
def test_loading_an_outside_skill_never_keeps_a_tool_that_changes_something(
    listed: frozenset[str] | None,
) -> None:
    skill = Skill("vendor", "From a vendor.", listed, "Buy now.", Path("vendor/SKILL.md"))
    outcome = Dispatcher([load_skill_tool([skill])], allowed=[LOAD_SKILL]).attempt(
        ToolCall(id="c1", name=LOAD_SKILL, arguments={"skill": "vendor"})
    )
    assert outcome.narrowing is not None
    assert set(outcome.narrowing.kept) <= OUTSIDE_SKILL_KEEPS
    assert outcome.narrowing.reason == "outside skill vendor"


def skill_text(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: Check the freezer.\n---\n{body}\n"


def test_a_skill_md_swapped_for_a_link_while_it_is_read_never_yields_the_file_outside(
    tmp_path: Path,
) -> None:
    # The race of issue 21: discovery checked for links, then opened the
    # resolved path. A thread swaps SKILL.md for a link to a file outside the
    # skills folder, and back, as fast as it can, while discovery runs.
    skills = tmp_path / "skills"
    (skills / "stock-check").mkdir(parents=True)
    private = tmp_path / "private.md"
    private.write_text(skill_text("stock-check", SECRET), encoding="utf-8")
    plain = tmp_path / "plain.md"
    link = tmp_path / "link.md"
    target = skills / "stock-check/SKILL.md"
    target.write_text(skill_text("stock-check", "Call `list_stock`."), encoding="utf-8")
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            plain.write_text(skill_text("stock-check", "Call `list_stock`."), encoding="utf-8")
            os.replace(plain, target)
            link.unlink(missing_ok=True)
            link.symlink_to(private)
            os.replace(link, target)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    loaded = refused = 0
    deadline = time.monotonic() + 4.0
    try:
        while time.monotonic() < deadline:
            try:
                (skill,) = discover_skills(skills)
            except SkillError:
                refused += 1
                continue
            loaded += 1
            assert SECRET not in skill.instructions
    finally:
        stop.set()
        swapper.join()
    # Both sides of the race were reached: the plain file was read, the link refused.
    assert loaded > 0 and refused > 0


def test_a_skill_md_hard_linked_to_a_file_outside_is_refused(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "stock-check").mkdir(parents=True)
    private = tmp_path / "private.md"
    private.write_text(skill_text("stock-check", SECRET), encoding="utf-8")
    os.link(private, skills / "stock-check/SKILL.md")
    with pytest.raises(SkillError) as caught:
        discover_skills(skills)
    assert caught.value.reason == "a hard link; a document is a file with one name"
    assert SECRET not in str(caught.value)


def test_a_document_hard_linked_to_a_file_outside_is_refused(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    private = tmp_path / "private.txt"
    private.write_text(SECRET + "\n", encoding="utf-8")
    os.link(private, notes / "prices.md")
    with pytest.raises(DocumentError) as caught:
        read_document_text(notes, "prices.md")
    assert caught.value.reason == "a hard link; a document is a file with one name"
    # The same file with one name is a note like any other.
    os.unlink(private)
    assert read_document_text(notes, "prices.md") == SECRET + "\n"


# Every character chapter 8 refuses in a note: controls but tab, line feed and
# carriage return, and invisible formatting (bidirectional controls among them).
HIDDEN = st.characters(categories=("Cc", "Cf")).filter(lambda c: c not in "\t\n\r")


@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    hidden=HIDDEN,
    where=st.sampled_from(("description", "instructions")),
    before=st.text(st.characters(categories=("L", "N", "Zs")), max_size=20),
)
def test_a_skill_with_a_character_lucy_cannot_see_is_refused_with_its_line(
    tmp_path: Path, hidden: str, where: str, before: str
) -> None:
    skills = tmp_path / f"skills-{ord(hidden):x}-{where}"
    (skills / "stock-check").mkdir(parents=True, exist_ok=True)
    description, body = "Check the freezer.", "Call `list_stock`."
    if where == "description":
        description = f"Check {before}{hidden} the freezer."
    else:
        body = f"Call `list_stock`.\n{before}{hidden}"
    text = f"---\nname: stock-check\ndescription: {description}\n---\n{body}\n"
    (skills / "stock-check/SKILL.md").write_text(text, encoding="utf-8", newline="")
    with pytest.raises(SkillError) as caught:
        discover_skills(skills)
    assert caught.value.reason == f"holds the invisible character U+{ord(hidden):04X}"
    assert caught.value.line == (3 if where == "description" else 6)
    assert unicodedata.category(hidden) in ("Cc", "Cf")


@pytest.mark.parametrize(
    "hidden", ["\u202e", "\u2066", "\u200b", "\u2060", "\U000e0041", "\x1b", "\x00"]
)
def test_bidirectional_invisible_and_control_characters_are_refused_in_a_skill(
    tmp_path: Path, hidden: str
) -> None:
    (tmp_path / "stock-check").mkdir()
    (tmp_path / "stock-check/SKILL.md").write_text(
        skill_text("stock-check", f"Call `list_stock`{hidden} and stop."), encoding="utf-8"
    )
    with pytest.raises(SkillError, match=f"U\\+{ord(hidden):04X}"):
        discover_skills(tmp_path)


def test_a_byte_order_mark_at_the_start_is_still_accepted(tmp_path: Path) -> None:
    (tmp_path / "stock-check").mkdir()
    (tmp_path / "stock-check/SKILL.md").write_text(
        "\ufeff" + skill_text("stock-check", "Call `list_stock`."), encoding="utf-8"
    )
    assert [skill.name for skill in discover_skills(tmp_path)] == ["stock-check"]


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.binary(max_size=600) | st.text(max_size=300).map(lambda t: t.encode("utf-8")))
def test_any_bytes_in_a_skill_md_are_a_skill_or_a_skill_error_and_nothing_else(
    tmp_path: Path, data: bytes
) -> None:
    # A vendor writes SKILL.md: whatever it holds, discovery answers with a
    # skill or with a SkillError naming the file, never with another exception.
    (tmp_path / "stock-check").mkdir(exist_ok=True)
    (tmp_path / "stock-check/SKILL.md").write_bytes(b"---\nname: stock-check\n" + data)
    try:
        (skill,) = discover_skills(tmp_path)
    except SkillError as error:
        assert error.path in (tmp_path / "stock-check/SKILL.md", tmp_path / "stock-check")
    else:
        assert skill.name == "stock-check"


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(description=st.text(max_size=80), steps=st.text(min_size=1, max_size=80))
def test_a_skill_that_is_accepted_holds_nothing_lucy_cannot_see(
    tmp_path: Path, description: str, steps: str
) -> None:
    (tmp_path / "stock-check").mkdir(exist_ok=True)
    text = f"---\nname: stock-check\ndescription: {description}\n---\n{steps}\n"
    (tmp_path / "stock-check/SKILL.md").write_text(text, encoding="utf-8", newline="")
    try:
        (skill,) = discover_skills(tmp_path)
    except SkillError:
        return
    for seen in (skill.description, skill.instructions):
        assert invisible_in(seen) is None


@pytest.mark.parametrize("escape", ["\\u202e", "\\x1b", "\\u200b", "\\U000E0041", "\\0"])
def test_a_hidden_character_written_as_a_yaml_escape_is_refused_too(
    tmp_path: Path, escape: str
) -> None:
    # The raw text holds only letters and a backslash; the parsed description
    # would hold the character itself, and reach the model's catalogue.
    (tmp_path / "stock-check").mkdir()
    (tmp_path / "stock-check/SKILL.md").write_text(
        f'---\nname: stock-check\ndescription: "Check {escape} the freezer"\n---\nSteps.\n',
        encoding="utf-8",
    )
    with pytest.raises(SkillError, match="its description holds the invisible character U"):
        discover_skills(tmp_path)
