"""Exercise Book 9, Unit B: noticing a joined tool the server changed after the shop checked it.

Each check plays a server through a session: the list it advertised at
connection, then the lists it sends again after `list_changed`. The door joins
at connection and asks the submission's `changed_tools` about each later list.
"""

from __future__ import annotations

import copy
import random
from types import ModuleType
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import JSON, Surface, Trial
from bookproof.grade.books.book09.common import (
    _UNREADABLE,
    BOOK,
    CHAPTER_SCHEMAS,
    S_RUG,
    S_UNIT_B,
    changed_view,
    chapter_tools,
    one_constraint_off,
    poisoned,
    secret,
    shuffled,
    tool,
    undeclared,
    watch,
)
from bookproof.grade.questions import expect, same

# The chapter's tools that join when advertised exactly; place_order is off by
# one key in these sessions, so it stays out and its changes must not count.
JOINING = ("check_availability", "next_delivery")


def _connection(rng: random.Random, planted: str) -> list[dict[str, Any]]:
    tools = chapter_tools(rng, planted)
    for listed in tools:
        if listed["name"] == "place_order":
            listed["inputSchema"]["properties"]["quantity"] = {
                "title": "Quantity",
                "type": "number",
            }
    return [*tools, undeclared(rng, planted)]


def _again(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(tools)


def _named(tools: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(listed for listed in tools if listed["name"] == name)


def _reworded(rng: random.Random, tools: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """`tools` again, with `name`'s description changed by a few words."""
    changed = _again(tools)
    listed = _named(changed, name)
    listed["description"] = str(listed.get("description", "")) + " " + fx.token(rng, 5)
    return changed


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="A joined tool whose description changes is found changed; the others are not.",
    hint="A joined tool whose name, description or input schema changed on a later list was "
    "not found changed, or an unchanged tool was.",
)
def ex2_reworded_is_changed(rng: random.Random) -> Trial:
    planted = secret(rng)
    connection = _connection(rng, planted)
    victim = rng.choice(JOINING)
    relists = [shuffled(rng, _again(connection)), _reworded(rng, connection, victim)]
    changed = changed_view((yield watch(shuffled(rng, connection), relists)), len(relists))
    if changed is None:
        return _UNREADABLE
    return expect(
        same([[], [victim]], changed),
        "An unchanged list (in another order) should change nothing; a joined tool with a "
        "reworded description should be the one tool changed.",
    )


@BOOK.exercise(
    2,
    points=2,
    section=S_UNIT_B,
    asks="A joined tool whose schema changes by one key, that vanishes or is listed twice, "
    "has changed.",
    hint="A joined tool whose schema changed by one key, that vanished from the list or was "
    "listed twice, was not found changed.",
)
def ex2_schema_vanished_or_twice(rng: random.Random) -> Trial:
    planted = secret(rng)
    connection = _connection(rng, planted)
    relists: list[list[dict[str, Any]]] = []
    expected: list[list[str]] = []
    for victim in JOINING:
        resigned = _again(connection)
        listed = _named(resigned, victim)
        listed["inputSchema"] = one_constraint_off(rng, CHAPTER_SCHEMAS[victim])
        gone = [listed for listed in _again(connection) if listed["name"] != victim]
        twice = [*_again(connection), _again([_named(connection, victim)])[0]]
        relists += [shuffled(rng, resigned), shuffled(rng, gone), shuffled(rng, twice)]
        expected += [[victim]] * 3
    changed = changed_view((yield watch(connection, relists)), len(relists))
    if changed is None:
        return _UNREADABLE
    return expect(
        same(expected, changed),
        "A joined tool whose schema changed by one key, that is no longer listed, or that is "
        "listed twice should be found changed.",
    )


@BOOK.exercise(
    2,
    points=2,
    section=S_RUG,
    asks="A change is judged against the connection's list: a change kept in the next list "
    "is still a change.",
    hint="A joined tool that changed on one list and stayed changed on the next was not found "
    "changed on that next list.",
)
def ex2_judged_against_connection(rng: random.Random) -> Trial:
    planted = secret(rng)
    connection = _connection(rng, planted)
    victim = rng.choice(JOINING)
    first = _reworded(rng, connection, victim)
    second = _reworded(rng, first, victim)
    relists = [first, _again(first), second, _again(connection)]
    changed = changed_view((yield watch(connection, relists)), len(relists))
    if changed is None:
        return _UNREADABLE
    return expect(
        same([[victim], [victim], [victim], []], changed),
        "A tool changed in small steps should be found changed at every step after the first, "
        "each judged against the connection's list.",
    )


@BOOK.exercise(
    2,
    points=1,
    section=S_UNIT_B,
    asks="Changes to tools that never joined, and new tools, change nothing the shop uses.",
    hint="A change to a tool that never joined (refused, undeclared, or added later) was "
    "reported as a change to the shop's tools.",
    requires=ex2_reworded_is_changed,
)
def ex2_only_joined_tools(rng: random.Random) -> Trial:
    planted = secret(rng)
    connection = _connection(rng, planted)
    reworded = _reworded(rng, connection, "place_order")
    extra = [*_again(connection), undeclared(rng, planted)]
    renamed_extra = _again(connection)
    for listed in renamed_extra:
        if listed["name"] not in CHAPTER_SCHEMAS:
            listed["description"] = poisoned(rng, planted)
    added = [*_again(connection), tool("price_quote", poisoned(rng, planted), {"type": "object"})]
    relists = [shuffled(rng, each) for each in (reworded, extra, renamed_extra, added)]
    changed = changed_view((yield watch(connection, relists)), len(relists))
    if changed is None:
        return _UNREADABLE
    return expect(
        same([[], [], [], []], changed),
        "Only a tool that joined at connection can be found changed: place_order (refused), "
        "undeclared tools and tools added later should change nothing.",
    )


CHANGE_TESTS = BOOK.learner_tests(
    exercise=2,
    file="test_book09_changes.py",
    section=S_UNIT_B,
    surface=Surface(functions={"watch": JSON}),
)


def _advertised(reference: ModuleType, tools: list[dict[str, Any]]) -> list[Any]:
    return [
        reference.Advertised(tool["name"], tool.get("description"), tool.get("inputSchema", {}))
        for tool in tools
    ]


@CHANGE_TESTS.catches(points=1, behaviour="judges each list against the list before it")
def ex2_tests_catch_against_the_last_list(
    reference: ModuleType, rng: random.Random
) -> dict[str, Any]:
    def watch(
        connection: list[dict[str, Any]], relists: list[list[dict[str, Any]]]
    ) -> dict[str, Any]:
        previous = _advertised(reference, connection)
        joined, _ = reference.match_tools(reference.SHOP_DECLARATIONS, previous)
        changed: list[list[str]] = []
        for relist in relists:
            now = _advertised(reference, relist)
            changed.append(sorted(reference.changed_tools(joined, previous, now)))
            previous = now
        return {"joined": sorted(declaration.name for declaration in joined), "changed": changed}

    return {"watch": watch}


@CHANGE_TESTS.catches(points=1, behaviour="sees a change of schema but not of description")
def ex2_tests_catch_description_ignored(
    reference: ModuleType, rng: random.Random
) -> dict[str, Any]:
    def tool_fingerprint(tool: Any) -> str | None:
        try:
            return str(reference.schema_fingerprint({"name": tool.name, "s": tool.input_schema}))
        except (TypeError, ValueError):
            return None

    vars(reference)["tool_fingerprint"] = tool_fingerprint
    return {"watch": reference.watch}


@CHANGE_TESTS.catches(points=1, behaviour="does not notice a joined tool the list no longer holds")
def ex2_tests_catch_vanished_unseen(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    original = reference.changed_tools

    def changed_tools(joined: Any, at_connection: Any, now: Any) -> frozenset[str]:
        listed = {tool.name for tool in now}
        kept = [d for d in joined if d.remote_name in listed]
        return frozenset(original(kept, at_connection, now))

    vars(reference)["changed_tools"] = changed_tools
    return {"watch": reference.watch}
