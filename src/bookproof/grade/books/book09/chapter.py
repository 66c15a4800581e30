"""Exercise Book 9's baseline: what chapter 9's matching, as the starter has it, already does.

Exercise 1's tool is left aside in these checks (`without_quote`): a
submission that declared it is judged on the chapter's tools like one that
did not.
"""

from __future__ import annotations

import json
import random

from bookproof.grade.book import Trial
from bookproof.grade.books.book09.common import (
    _UNREADABLE,
    BOOK,
    CHAPTER_SCHEMAS,
    S_DECLARE,
    S_JOIN,
    S_POISON,
    chapter_tools,
    join,
    joined_view,
    offered,
    one_constraint_off,
    poisoned,
    secret,
    shuffled,
    tool,
    undeclared,
    without_quote,
)
from bookproof.grade.questions import expect, same


@BOOK.baseline(
    points=1,
    section=S_JOIN,
    asks="The chapter's three declared tools join when advertised exactly; others are undeclared.",
    hint="A declared tool advertised once with its model's exact schema joins; every tool the "
    "shop did not declare is refused as undeclared.",
)
def ch9_declared_tools_join(rng: random.Random) -> Trial:
    planted = secret(rng)
    extras = [undeclared(rng, planted) for _ in range(rng.randint(1, 3))]
    view = joined_view((yield join(shuffled(rng, [*chapter_tools(rng, planted), *extras]))))
    if view is None:
        return _UNREADABLE
    tools, refusals = without_quote(view)
    if not same([offered(name) for name in sorted(CHAPTER_SCHEMAS)], tools):
        return "The three declared tools, advertised with their exact schemas, should all join."
    return expect(
        same(sorted([extra["name"], "undeclared"] for extra in extras), refusals),
        "Every tool the shop did not declare should be refused as undeclared, and nothing else.",
    )


@BOOK.baseline(
    points=2,
    section=S_DECLARE,
    asks="An advertised schema that differs from the declared one in one key is schema_mismatch.",
    hint="Compare the whole advertised schema with the declared model's, key for key (chapter "
    "4's fingerprint); a looser or stricter constraint refuses the tool.",
)
def ch9_schema_mismatch(rng: random.Random) -> Trial:
    planted = secret(rng)
    victim = rng.choice(sorted(CHAPTER_SCHEMAS))
    tools = [
        tool(name, poisoned(rng, planted), one_constraint_off(rng, schema))
        if name == victim
        else tool(name, poisoned(rng, planted), schema)
        for name, schema in CHAPTER_SCHEMAS.items()
    ]
    view = joined_view((yield join(shuffled(rng, tools))))
    if view is None:
        return _UNREADABLE
    joined, refusals = without_quote(view)
    kept = [offered(name) for name in sorted(CHAPTER_SCHEMAS) if name != victim]
    return expect(
        same(kept, joined) and same([[victim, "schema_mismatch"]], refusals),
        "A declared tool whose advertised schema differs by one constraint should be refused "
        "as schema_mismatch, and the others should still join.",
    )


@BOOK.baseline(
    points=1,
    section=S_POISON,
    asks="Nothing a server wrote (descriptions, undeclared names) is in what the model is offered.",
    hint="The model is shown the declared name, the shop's description and the declared "
    "model's schema: never the server's words.",
)
def ch9_server_words_never_offered(rng: random.Random) -> Trial:
    planted = secret(rng)
    tools = [*chapter_tools(rng, planted), undeclared(rng, planted)]
    view = joined_view((yield join(shuffled(rng, tools))))
    if view is None:
        return _UNREADABLE
    return expect(
        planted not in json.dumps(view["offered"]),
        "A server's description or the name of a tool that did not join reached what the "
        "model is offered.",
    )


@BOOK.baseline(
    points=1,
    section=S_DECLARE,
    asks="A declared tool advertised twice is refused as advertised_twice, whichever copy matches.",
    hint="A name the server lists twice is ambiguous: refuse it even when one copy matches.",
)
def ch9_advertised_twice(rng: random.Random) -> Trial:
    planted = secret(rng)
    victim = rng.choice(sorted(CHAPTER_SCHEMAS))
    copies = [
        tool(victim, poisoned(rng, planted), CHAPTER_SCHEMAS[victim]),
        tool(victim, poisoned(rng, planted), one_constraint_off(rng, CHAPTER_SCHEMAS[victim])),
    ]
    view = joined_view((yield join(shuffled(rng, copies))))
    if view is None:
        return _UNREADABLE
    joined, refusals = without_quote(view)
    expected = sorted(
        [name, "advertised_twice" if name == victim else "not_advertised"]
        for name in CHAPTER_SCHEMAS
    )
    return expect(
        same([], joined) and same(expected, refusals),
        "A name advertised twice should be refused as advertised_twice, and a declared tool "
        "that is not advertised as not_advertised.",
    )
