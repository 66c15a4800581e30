"""Chapter 11's purchasing run, by effect classes: only a call that can spend waits for an approval.

The purchase tool declares what it does (it records, spends and sends the
order out); the approval authority's amount rules are worked out from what
each tool declares, so a priced tool that cannot spend is never approvable,
and a spending tool nobody priced is refused, never run. Each property runs
random class sets through the real dispatcher, the real authority and the
real ledger in a real SQLite store.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from approvals_fixture import Clock, friday_store
from hypothesis import given, settings
from hypothesis import strategies as st
from scratch import memory_folder
from strength import examples

from sovereign_agent.approvals import list_approvals
from sovereign_agent.approvals.authority import Priced
from sovereign_agent.effects import Effect
from sovereign_agent.purchasing import (
    SPENDING_TOOLS,
    SupplierDesk,
    build_purchasing_tools,
    spending_prices,
)
from sovereign_agent.shop import NoArguments
from sovereign_agent.store import open_store
from sovereign_agent.tools import ExecutableTool, ToolCall

class_sets = st.frozensets(st.sampled_from(list(Effect)), min_size=1)
# Never contacted: no call in these tests is approved, so nothing is purchased.
NOWHERE = SupplierDesk("http://127.0.0.1:9")


def a_pound(connection: sqlite3.Connection, arguments: object) -> int:
    return 100


def tool(name: str, classes: frozenset[Effect], log: list[str]) -> ExecutableTool[NoArguments]:
    def handler(arguments: NoArguments) -> str:
        log.append(name)
        return "done"

    return ExecutableTool(name, f"Does {name}.", NoArguments, handler, effects=classes)


def test_the_purchase_tool_declares_that_it_records_spends_and_sends_out(tmp_path: Path) -> None:
    store = open_store(friday_store(tmp_path / "s.db"))
    dispatcher, _ = build_purchasing_tools(store, NOWHERE)
    assert {name: set(t.effects) for name, t in dispatcher.tools.items()} == {
        "list_stock": {"read"},
        "supplier": {"read"},
        "draft_order": {"write"},
        "place_order": {"write", "money", "egress"},
    }
    assert dispatcher.tools["place_order"].consequential is True
    store.close()


def test_only_the_tools_that_can_spend_keep_an_amount_rule() -> None:
    log: list[str] = []
    tools = [
        tool("place_order", frozenset({Effect.WRITE, Effect.MONEY}), log),
        tool("draft_order", frozenset({Effect.WRITE}), log),
    ]
    prices = {**SPENDING_TOOLS, "draft_order": Priced(NoArguments, a_pound)}
    assert set(spending_prices(tools, prices)) == {"place_order"}
    # A tool declared only with chapter 2's boolean stands for every class, money among them.
    old_style = ExecutableTool("place_order", "O.", NoArguments, lambda a: None, consequential=True)
    assert set(spending_prices([old_style])) == {"place_order"}


@settings(max_examples=examples(40), deadline=None)
@given(extra=st.lists(class_sets, min_size=1, max_size=5), priced=st.booleans())
def test_only_a_call_that_can_spend_waits_for_an_approval(
    extra: list[frozenset[Effect]], priced: bool
) -> None:
    with tempfile.TemporaryDirectory(dir=memory_folder()) as folder:
        store = open_store(friday_store(Path(folder) / "s.db"))
        log: list[str] = []
        extras = [tool(f"tool_{n}", classes, log) for n, classes in enumerate(extra)]
        # Every extra tool has an amount rule when `priced`: the rule alone never makes
        # a call approvable, only the classes do.
        prices = {
            **SPENDING_TOOLS,
            **({t.name: Priced(NoArguments, a_pound) for t in extras} if priced else {}),
        }
        dispatcher, _ = build_purchasing_tools(
            store,
            NOWHERE,
            allowed=[*(t.name for t in extras), "place_order"],
            extra_tools=extras,
            prices=prices,
            run_id="r",
            clock=Clock(),
        )
        outcomes = {
            t.name: dispatcher.attempt(ToolCall(id=t.name, name=t.name, arguments={}))
            for t in extras
        }
        waiting = {a.tool for a in list_approvals(store) if a.status == "PENDING"}
        for t in extras:
            classes = {c.value for c in t.effects}
            spends = "money" in classes
            needs_authority = bool(classes & {"money", "code"})
            assert (t.name in waiting) is (spends and priced)
            # Nothing that needs an authority ran: no approval was ever given.
            assert (t.name in log) is not needs_authority
            if needs_authority:
                assert outcomes[t.name].observation == {"ok": False, "error": "tool_failed"}
        store.close()
