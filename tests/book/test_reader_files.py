"""Every drafted chapter's reader files, run as a reader runs them: one test each, by manifest.

A reader opens the learner file in an editor and imports it, and runs the
checkpoint from whatever folder they are in. For every drafted chapter of
`book/textbook/book.toml`, so that a chapter added later is held without a
line written here: importing the learner file prints nothing and leaves
nothing behind; the checkpoint, run offline from an empty folder, prints
exactly the chapter's `checkpoint-output` block and leaves that folder empty;
and the learner file and the checkpoint define what the chapter's listings
define, syntax tree for syntax tree.

What a chapter promises is written out below, independently of its code, as
data: the lines its checkpoint must print (`FACTS`), the order some of them
must come in (`IN_ORDER`), what the checkpoint needs on the machine
(`NEEDS`), exactly what the learner file defines (`LEARNER_DEFINES`), what
the text shows as changes to an earlier chapter (`SHOWN_AS_CHANGES`), and
which listings the checkpoint uses as printed (`CHECKPOINT_SHARES_*`). A new
chapter adds its rows; its own test file keeps only what that chapter alone
does (a provider stub, a runtime module compared with its learner file).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from chapter_files import (
    checkpoint_output,
    definitions,
    listing_definitions,
    run_checkpoint,
    run_python,
    shown_as_changes,
)
from system_components import require_executable

from bookproof.layout import ChapterParts, default_layout, load_manifest

LAYOUT = default_layout()
DRAFTED = [LAYOUT.parts(chapter) for chapter in load_manifest(LAYOUT.manifest).drafted]


def chapter_id(parts: ChapterParts) -> str:
    return f"ch{parts.number:02d}"


# The facts each chapter promises its checkpoint prints, each a whole line.
FACTS: dict[int, tuple[str, ...]] = {
    3: (
        "draft SKU-VANILLA: 6 tubs, 1,500 pence",
        "drafts total: 2,600 pence",
        "vanilla on hand: 2",
    ),
    5: (
        "seeded from SHOP (on hand/target): SKU-CHOCOLATE 7/6, SKU-STRAWBERRY 1/5, SKU-VANILLA 2/8",
        "saved draft 1: SKU-VANILLA 6 tubs, 1,500 pence, DRAFT",
        "saved draft 2: SKU-STRAWBERRY 4 tubs, 1,100 pence, DRAFT",
        "drafts saved: 2",
        "second process sees: SKU-VANILLA 6 tubs (1,500 pence), "
        "SKU-STRAWBERRY 4 tubs (1,100 pence): 2,600 pence in all",
        "delivery of 7 SKU-VANILLA: on_hand 9, need 0",
        "in one transaction: BEGIN, INSERT, UPDATE, SELECT, UPDATE, SELECT, COMMIT",
        "draft 1 SKU-VANILLA: SUPERSEDED",
        "draft 2 SKU-STRAWBERRY: DRAFT",
    ),
    6: (
        "reserve 3 SKU-VANILLA: on hand 2, reserved 3, incoming 0, need 9",
        "reserve 2 SKU-CHOCOLATE: on hand 7, reserved 2, incoming 0, need 1",
        "expect_delivery 4 SKU-STRAWBERRY: on hand 1, reserved 0, incoming 4, need 0",
        "saved draft 1: SKU-VANILLA 9 tubs, 2,250 pence, DRAFT",
        "saved draft 2: SKU-CHOCOLATE 1 tub, 300 pence, DRAFT",
        "morning plan: SKU-VANILLA 9 tubs, SKU-CHOCOLATE 1 tub: 2,550 pence in all",
        # Receiving what was expected and collecting leave each need as it was.
        "receive 4 SKU-STRAWBERRY, expected: on hand 5, incoming 0, need 0",
        "collect 2 SKU-CHOCOLATE: on hand 5, reserved 0, need 1",
        "collect 3 SKU-VANILLA refused: cannot collect 3 tubs of SKU-VANILLA: only 2 on hand",
        "the refusal changed nothing: True",
        "still open: SKU-VANILLA 9 tubs, SKU-CHOCOLATE 1 tub: 2,550 pence in all",
    ),
    7: (
        "skills: bulk-buyer, morning-reorder, price-check",
        "narrowed by load_skill [call-1]: skill morning-reorder",
        "  kept: draft_order, list_stock",
        "  removed: load_skill, supplier",
        "draft SKU-VANILLA: 6 tubs, 1,500 pence",
        "draft SKU-STRAWBERRY: 4 tubs, 1,100 pence",
        "drafts total: 2,600 pence",
        "narrowed by load_skill [call-1]: skill bulk-buyer",
        "  kept: list_stock",
        "  removed: draft_order, load_skill, supplier",
        "  ignored: place_order",
        "refused: place_order (tool_not_allowed), draft_order (tool_not_allowed)",
        "orders placed: 0",
        "vanilla on hand: 2",
    ),
    8: (
        "documents: strawberry-price.md, vanilla-offer.md",
        "naive loop",
        "purchases: 500 tubs of SKU-VANILLA",
        "this runtime",
        "refused: place_order (tool_not_allowed)",
        "narrowed by read_document [call-1]: untrusted text: vanilla-offer.md",
        "  kept: list_stock, read_document, supplier",
        "  removed: draft_order, place_order",
        "purchases: (none)",
        "vanilla on hand: 2",
        "narrowed by read_document [call-1]: untrusted text: strawberry-price.md",
        "quoted SKU-STRAWBERRY: 275 pence",
    ),
    9: (
        "joined: check_availability, next_delivery",
        "not joined: place_order (schema_mismatch), apply_discount_code (undeclared)",
        "poisoned description offered: no",
        "vanilla available: 40",
        "narrowed by check_availability [call-1]: tool_changed",
        "  removed: check_availability",
    ),
    10: (
        "morning run: awaiting_approval",
        'pending: 1 place_order {"quantity":9,"sku":"SKU-VANILLA"} 2,250 pence',
        'pending: 2 place_order {"quantity":1,"sku":"SKU-CHOCOLATE"} 300 pence',
        "budget: 5,000 pence a week, 2,550 pence reserved, 0 pence spent, 2,450 pence left",
        "next run: final_answer",
        "ordered: SKU-VANILLA 9 tubs, approval 1",
        "ordered: SKU-CHOCOLATE 1 tub, approval 2",
        "lucy approves 3: exit 1: error: over_budget: approval 3 is for 3,300 pence;"
        " only 2,450 pence are left this week",
    ),
    11: (
        "approval-1 attempt 1: the connection was lost before the answer (RemoteDisconnected)",
        "approval-1 attempt 2: 201 SUP-0001 Idempotent-Replayed: true",
        "approval-2 attempt 1: 201 SUP-0002",
        "order 1: SKU-VANILLA 9 CONFIRMED SUP-0001",
        "order 2: SKU-CHOCOLATE 1 CONFIRMED SUP-0002",
        "ledger: 2 orders, 2,550 pence",
    ),
    # The first worker killed after SUP-0001 with the purchase in doubt, the
    # second asking the model only for the step nobody reached, one order each.
    12: (
        "first worker: bought SUP-0001",
        "first worker: exit -9",
        "order 1: SKU-VANILLA 9 PREPARED",
        "ledger: 1 order, 2,250 pence; twice: none",
        "run 2: finished, final_answer after 3 step(s); 2 reply(ies) and 1 outcome(s) from the "
        "journal",
        "model asked for step 3",
        "order 1: SKU-VANILLA 9 CONFIRMED SUP-0001",
        "order 2: SKU-CHOCOLATE 1 CONFIRMED SUP-0002",
        "ledger: 2 orders, 2,550 pence; twice: none",
    ),
    13: (
        "slow supplier: tool_timeout at 2.0 s",
        "call 3 at 0.4 s: rate_limited (retry in 0.1 s)",
        "three reads, one after another: VANILLA 40, CHOCOLATE 12, STRAWBERRY 0; done at 0.6 s",
        "three reads, side by side: VANILLA 40, CHOCOLATE 12, STRAWBERRY 0; done at 0.2 s",
        "three reads in a run: stop final_answer at 0.2 s",
        "three reads in a run: stop deadline at 6.0 s",
        'chat completions, whole: check_availability {"sku": "VANILLA"}',
        'messages, whole: check_availability {"sku": "VANILLA"}',
        "messages, cut: ModelResponseError: the stream was cut before message_stop",
    ),
    14: (
        'program: printed {"sku": "SKU-STRAWBERRY", "saturdays": [11, 12, 9, 12], '
        '"friday_night": 12}',
        "answer: Strawberry sells most on Saturdays (44 tubs over 4 Saturdays). Have 12 tubs of "
        "strawberry on Friday night: the most sold on any of those Saturdays.",
        "read a file outside: raised: FileNotFoundError: [Errno 2] No such file or directory: "
        "'/etc/passwd'",
        "open a socket: raised: OSError: [Errno 101] Network is unreachable",
        "start a process: raised: PermissionError: [Errno 1] Operation not permitted",
        "endless loop: time_limit: the code ran past its time limit and was stopped",
        "memory bomb: memory_limit: the code asked for more memory than its limit",
        "flood of output: output_limit: the code printed more than its output limit and was "
        "stopped",
        "write outside scratch: raised: OSError: [Errno 30] Read-only file system: "
        "'/data/sales.csv'",
    ),
}

# Lines that must come in this order: the story the chapter tells.
IN_ORDER: dict[int, tuple[str, ...]] = {
    # The naive loop bought before this runtime ran; this runtime bought nothing.
    8: ("purchases: 500 tubs of SKU-VANILLA", "this runtime", "purchases: (none)"),
}

# What a chapter's checkpoint needs on the machine: (executable, how to install it).
NEEDS: dict[int, tuple[str, str]] = {
    14: ("bwrap", "sudo apt-get install bubblewrap"),
}


# Definitions a chapter shows as `changes=` to an earlier chapter's: composed
# and compared by the verifier, so only their names are held here.
SHOWN_AS_CHANGES: dict[int, set[str]] = {
    # Section 10.11.
    10: {
        "build_tools",
        "build_store_tools",
        "build_document_tools",
        "read_document_tool",
        "load_skill_tool",
        "build_skill_tools",
    },
    # Section 13.7: the loop answers a turn's reads together.
    13: {"run_task"},
}

# Exactly what each learner file defines: a definition added or lost is seen.
LEARNER_DEFINES: dict[int, set[str]] = {
    10: {
        "friday_store",
        "order_what_is_needed",
        # Section 10.11: the effect classes and the tools that declare them.
        "Effect",
        "Classed",
        "classes_of_consequential",
        "needs_authority",
        "kept_after_untrusted_text",
        "ExecutableTool",
    }
    | SHOWN_AS_CHANGES[10],
    11: {
        "start_supplier",
        "ledger_says",
        "naive_order",
        "post",
        "friday_store",
        "order_what_is_needed",
        "show",
    },
    12: {"start_supplier", "ledger_says", "worker", "friday_morning", "runs"},
    13: {
        "SkuArguments",
        "supplier_tools",
        "ask",
        "said",
        "TokenBucket",
        "MeteredModel",
        "turn_events",
        "wire",
        "carried",
        "streamed",
        "StopReason",
        "TurnDispatcher",
        "runs_side_by_side",
        "batch_from",
        "answer_together",
    }
    | SHOWN_AS_CHANGES[13],
    14: {"looks_harmless", "show", "write_the_analysis", "answer_from_the_result"},
}

# Listing definitions the checkpoint must use as they are printed: at least
# these (more may come), or exactly these.
CHECKPOINT_SHARES_AT_LEAST: dict[int, set[str]] = {
    11: {"start_supplier", "ledger_says", "friday_store", "show"},
    12: {"start_supplier", "ledger_says", "worker", "friday_morning"},
    13: {"supplier_tools", "said", "turn_events", "wire", "streamed"},
}
CHECKPOINT_SHARES_EXACTLY: dict[int, set[str]] = {
    14: {"write_the_analysis", "answer_from_the_result"},
}

TABLES = (
    FACTS,
    IN_ORDER,
    NEEDS,
    LEARNER_DEFINES,
    SHOWN_AS_CHANGES,
    CHECKPOINT_SHARES_AT_LEAST,
    CHECKPOINT_SHARES_EXACTLY,
)


def test_the_tables_name_only_drafted_chapters() -> None:
    # A fact kept for a chapter the manifest does not list would silently hold nothing.
    drafted = {parts.number for parts in DRAFTED}
    for table in TABLES:
        assert set(table) <= drafted
    for number, ordered in IN_ORDER.items():
        assert set(ordered) <= set(FACTS[number]), number


@pytest.mark.parametrize("chapter", DRAFTED, ids=chapter_id)
def test_importing_the_learner_file_prints_nothing_and_leaves_nothing(
    chapter: ChapterParts, tmp_path: Path
) -> None:
    learner = str(chapter.learner)
    result = run_python("-c", f"import runpy; runpy.run_path({learner!r})", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("chapter", DRAFTED, ids=chapter_id)
def test_the_offline_checkpoint_prints_the_chapters_output_and_its_facts(
    chapter: ChapterParts, tmp_path: Path
) -> None:
    if chapter.number in NEEDS:
        executable, install = NEEDS[chapter.number]
        require_executable(executable, install=install)
    result = run_checkpoint(chapter.checkpoint, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == checkpoint_output(chapter.text)
    lines = result.stdout.splitlines()
    for fact in FACTS.get(chapter.number, ()):
        assert fact in lines, fact
    ordered = [lines.index(line) for line in IN_ORDER.get(chapter.number, ())]
    assert ordered == sorted(ordered)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("chapter", DRAFTED, ids=chapter_id)
def test_the_learner_file_defines_what_the_listings_define(chapter: ChapterParts) -> None:
    learner = definitions(chapter.learner)
    if chapter.number in LEARNER_DEFINES:
        assert set(learner) == LEARNER_DEFINES[chapter.number]
    shown = shown_as_changes(chapter.text)
    if chapter.number in SHOWN_AS_CHANGES:
        assert shown == SHOWN_AS_CHANGES[chapter.number]
    listings = listing_definitions(chapter.text)
    for name, tree in learner.items():
        if name in shown:
            continue  # composed and compared by the verifier
        assert listings[name] == tree, f"{name} differs from the chapter's listing"


@pytest.mark.parametrize("chapter", DRAFTED, ids=chapter_id)
def test_the_checkpoint_defines_what_the_listings_define_the_same_way(
    chapter: ChapterParts,
) -> None:
    listings = listing_definitions(chapter.text)
    checkpoint = definitions(chapter.checkpoint)
    shared = set(checkpoint) & set(listings)
    if chapter.number in CHECKPOINT_SHARES_AT_LEAST:
        assert CHECKPOINT_SHARES_AT_LEAST[chapter.number] <= shared
    if chapter.number in CHECKPOINT_SHARES_EXACTLY:
        assert shared == CHECKPOINT_SHARES_EXACTLY[chapter.number]
    for name in shared:
        assert listings[name] == checkpoint[name], f"{name} differs from the chapter's listing"
