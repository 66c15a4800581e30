"""Exercise Book 9, Unit C: what a server that changed a tool may keep, an open design task.

The unit gives `still_offered(joined, at_connection, relists)` and what Lucy
needs of a session whose server changes its tools (a changed tool is
withdrawn for the rest of the session; once any joined tool changed, every
consequential one goes too; tools that never joined never come); the design
is the learner's. What is graded is only what the door's `keep` answers: the
tools joined at connection, and the tools still offered after each later
list. Each check plays the server, writing the chapter's three tools (never
Exercise 1's quote, so Unit A, done or not, changes nothing here) and the
changes itself.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from bookproof.grade import fixtures as fx
from bookproof.grade.book import Trial
from bookproof.grade.books.book09.common import (
    BOOK,
    CHAPTER_SCHEMAS,
    CONSEQUENTIAL,
    S_RUG,
    chapter_tools,
    one_constraint_off,
    poisoned,
    secret,
    shuffled,
    tool,
    undeclared,
)
from bookproof.grade.questions import Question, call, expect, same

S_KEEP = S_RUG + " (Exercise Book 9, Unit C)"
EVERY = sorted(CHAPTER_SCHEMAS)
READS = [name for name in EVERY if not CONSEQUENTIAL[name]]
SPENDS = [name for name in EVERY if CONSEQUENTIAL[name]]
_UNREADABLE = "The door did not answer with its plain shape (did keep raise?)."


def keep(connection: list[dict[str, Any]], relists: list[list[dict[str, Any]]]) -> Question:
    return call("keep", connection, relists)


def offered_view(value: Any, relists: int) -> list[Any] | None:
    """The door's `offered` lists, when every tool joined and the answer has its shape."""
    if not isinstance(value, dict) or set(value) != {"joined", "offered"}:
        return None
    if value["joined"] != EVERY:
        return None
    offered = value["offered"]
    if not isinstance(offered, list) or len(offered) != relists:
        return None
    return offered


def _again(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return copy.deepcopy(tools)


def changed(rng: random.Random, tools: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """`tools` again, `name` changed one of section 9.6's ways: reworded, resigned, gone, twice."""
    again = _again(tools)
    victim = next(listed for listed in again if listed["name"] == name)
    way = rng.choice(["reworded", "resigned", "gone", "twice"])
    if way == "reworded":
        victim["description"] = str(victim.get("description", "")) + " " + fx.token(rng, 5)
    elif way == "resigned":
        victim["inputSchema"] = one_constraint_off(rng, CHAPTER_SCHEMAS[name])
    elif way == "gone":
        again.remove(victim)
    else:
        again.append(copy.deepcopy(victim))
    return again


@BOOK.exercise(
    3,
    points=2,
    section=S_KEEP,
    asks="A joined reading tool that changed is withdrawn from that list on, for the rest of "
    "the session, even once the server lists it as it was; unchanged reading tools stay.",
    hint="Over a session whose server changed a reading tool, that tool was still offered "
    "after the change, came back once the server listed it as it was, or an unchanged "
    "reading tool was withdrawn.",
)
def ex3_changed_stays_withdrawn(rng: random.Random) -> Trial:
    planted = secret(rng)
    connection = chapter_tools(rng, planted)
    victim = rng.choice(READS)
    calm = rng.randint(0, 2)
    relists = [shuffled(rng, _again(connection)) for _ in range(calm)]
    relists += [changed(rng, connection, victim), shuffled(rng, _again(connection))]
    kept = offered_view((yield keep(connection, relists)), len(relists))
    if kept is None:
        return _UNREADABLE
    # Only the reading tools: what goes with them is ex3_spending_goes_with_any_change's.
    reads = [[name for name in names if name in READS] for names in kept if isinstance(names, list)]
    after = [name for name in READS if name != victim]
    return expect(
        same([READS] * calm + [after, after], reads),
        "The changed reading tool was offered after its change, or came back, or an "
        "unchanged reading tool went with it.",
    )


@BOOK.exercise(
    3,
    points=2,
    section=S_KEEP,
    asks="Once any joined tool has changed, every consequential tool is withdrawn too, for the "
    "rest of the session, though it did not change itself.",
    hint="After the server changed one of its tools, a tool that spends money was still "
    "offered (or came back later), or was withdrawn before anything had changed.",
)
def ex3_spending_goes_with_any_change(rng: random.Random) -> Trial:
    planted = secret(rng)
    connection = chapter_tools(rng, planted)
    victim = rng.choice(READS)
    calm = rng.randint(1, 2)
    relists = [shuffled(rng, _again(connection)) for _ in range(calm)]
    relists += [changed(rng, connection, victim), _again(connection), _again(connection)]
    kept = offered_view((yield keep(connection, relists)), len(relists))
    if kept is None:
        return _UNREADABLE
    left = [name for name in READS if name != victim]
    if not same([EVERY] * calm, kept[:calm]):
        return "A tool was withdrawn before the server had changed anything."
    return expect(
        same([left] * 3, kept[calm:]),
        "After one reading tool changed, a spending tool that had not changed was still "
        "offered, or came back on a later list.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_KEEP,
    asks="Lists that change nothing the shop joined (reordered, new or changed undeclared "
    "tools) withdraw nothing, and a tool first advertised later is never offered.",
    hint="A list that changed nothing the shop had joined (another order, an undeclared tool "
    "added or reworded, a new tool) withdrew a tool, or a tool that never joined was offered.",
    requires=ex3_changed_stays_withdrawn,
)
def ex3_nothing_changed_nothing_withdrawn(rng: random.Random) -> Trial:
    planted = secret(rng)
    stranger = undeclared(rng, planted)
    connection = [*chapter_tools(rng, planted), stranger]
    reworded = _again(connection)
    reworded[-1]["description"] = poisoned(rng, planted)
    added = [*_again(connection), tool("price_quote", poisoned(rng, planted), {"type": "object"})]
    relists = [shuffled(rng, each) for each in (_again(connection), reworded, added)]
    relists.append(shuffled(rng, [*_again(connection), undeclared(rng, planted)]))
    kept = offered_view((yield keep(shuffled(rng, connection), relists)), len(relists))
    if kept is None:
        return _UNREADABLE
    return expect(
        same([EVERY] * len(relists), kept),
        "A list that changed nothing the shop had joined withdrew a tool, or offered one "
        "that never joined.",
    )
