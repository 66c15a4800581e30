"""Exercise Book 9, Unit A: declaring the supplier's `price_quote`, and the tests of it."""

from __future__ import annotations

import json
import random
from types import ModuleType
from typing import Any

from pydantic import ConfigDict, Field, create_model

from bookproof.grade.book import JSON, Surface, Trial
from bookproof.grade.books.book09.common import (
    _UNREADABLE,
    BOOK,
    CHAPTER_SCHEMAS,
    QUOTE_LOCAL,
    QUOTE_OFFERED,
    QUOTE_REMOTE,
    QUOTE_SCHEMA,
    S_UNIT_A,
    chapter_tools,
    join,
    joined_view,
    offered,
    one_constraint_off,
    quote_tool,
    secret,
    shuffled,
    undeclared,
)
from bookproof.grade.questions import expect, same

# --- exercise 1: one more declaration ------------------------------------------------------


@BOOK.exercise(
    1,
    points=3,
    section=S_UNIT_A,
    asks="price_quote, advertised with exactly the declared schema, joins as "
    "supplier_price_quote with the shop's description, beside the chapter's tools.",
    hint="price_quote, advertised with exactly the schema Unit A states, did not join under "
    "the shop's local name and description beside the chapter's tools.",
)
def ex1_price_quote_joins(rng: random.Random) -> Trial:
    planted = secret(rng)
    tools = [*chapter_tools(rng, planted), quote_tool(rng, planted), undeclared(rng, planted)]
    view = joined_view((yield join(shuffled(rng, tools))))
    if view is None:
        return _UNREADABLE
    quote = [item for item in view["offered"] if item.get("name") == QUOTE_LOCAL]
    if not quote:
        return "price_quote, advertised with the declared schema, did not join."
    if not same(QUOTE_OFFERED, quote[0]):
        return (
            "The model should be shown price_quote under the shop's name, with the shop's "
            "description, the declared model's schema, and as not consequential."
        )
    expected = sorted([QUOTE_OFFERED, *(offered(name) for name in CHAPTER_SCHEMAS)], key=str)
    return expect(
        same(expected, sorted(view["offered"], key=str)) and planted not in json.dumps(view),
        "Declaring price_quote should leave the chapter's tools joining as before, and keep "
        "the server's words out of what the model is offered.",
    )


@BOOK.exercise(
    1,
    points=3,
    section=S_UNIT_A,
    asks="price_quote advertised with a schema one constraint off is refused as schema_mismatch.",
    hint="price_quote advertised with one bound, type, pattern or key different from the "
    "schema Unit A states was joined instead of refused as schema_mismatch.",
)
def ex1_one_constraint_off(rng: random.Random) -> Trial:
    planted = secret(rng)
    trials = rng.randint(3, 5)
    for _ in range(trials):
        off = quote_tool(rng, planted, one_constraint_off(rng, QUOTE_SCHEMA))
        view = joined_view((yield join(shuffled(rng, [*chapter_tools(rng, planted), off]))))
        if view is None:
            return _UNREADABLE
        if [QUOTE_LOCAL, "schema_mismatch"] not in view["refused"]:
            return (
                "A price_quote schema that differs from the declared one in a single bound, "
                "type, pattern or key should be refused as schema_mismatch."
            )
        if any(item.get("name") == QUOTE_LOCAL for item in view["offered"]):
            return "A price_quote whose schema differs should not be offered to the model."
    return None


@BOOK.exercise(
    1,
    points=1,
    section=S_UNIT_A,
    asks="A server that does not list price_quote gets it refused as not_advertised.",
    hint="A server that does not list price_quote under its remote name had it joined instead "
    "of refused as not_advertised.",
)
def ex1_not_advertised(rng: random.Random) -> Trial:
    planted = secret(rng)
    named = undeclared(rng, planted)
    named["name"] = QUOTE_LOCAL  # the shop's name on the server is not the tool
    view = joined_view((yield join(shuffled(rng, [*chapter_tools(rng, planted), named]))))
    if view is None:
        return _UNREADABLE
    return expect(
        [QUOTE_LOCAL, "not_advertised"] in view["refused"]
        and [QUOTE_LOCAL, "undeclared"] in view["refused"],
        "Without a tool named price_quote on the server, supplier_price_quote should be "
        "refused as not_advertised; a server tool that merely uses the shop's name is undeclared.",
    )


DECLARATION_TESTS = BOOK.learner_tests(
    exercise=1,
    file="test_book09_declarations.py",
    section=S_UNIT_A,
    surface=Surface(functions={"join": JSON}),
)


def _declared_with(reference: ModuleType, maximum: int | None, minimum: int) -> None:
    """Replace price_quote's declared model by one with other bounds on `quantity`."""
    quantity = Field(ge=minimum) if maximum is None else Field(ge=minimum, le=maximum)
    model = create_model(
        "PriceQuote",
        __config__=ConfigDict(extra="forbid", strict=True),
        sku=(str, Field(pattern=r"^[A-Z]{1,20}$")),
        quantity=(int, quantity),
    )
    declarations = tuple(
        declaration.__class__(
            name=declaration.name,
            arguments=model,
            description=declaration.description,
            consequential=declaration.consequential,
            remote=declaration.remote,
        )
        if declaration.remote_name == QUOTE_REMOTE
        else declaration
        for declaration in reference.SHOP_DECLARATIONS
    )
    # The module's own namespace: the door looks the name up there at every call.
    vars(reference)["SHOP_DECLARATIONS"] = declarations


@DECLARATION_TESTS.catches(points=1, behaviour="declares price_quote with no upper bound")
def ex1_tests_catch_no_upper_bound(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    _declared_with(reference, None, 1)
    return {"join": reference.join}


@DECLARATION_TESTS.catches(points=1, behaviour="declares price_quote with the bounds 0 to 1,000")
def ex1_tests_catch_other_bounds(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    _declared_with(reference, 1_000, 0)
    return {"join": reference.join}


@DECLARATION_TESTS.catches(points=1, behaviour="joins a declared tool by its name alone")
def ex1_tests_catch_name_only(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    vars(reference)["schema_matches"] = lambda model, advertised: True
    return {"join": reference.join}


@DECLARATION_TESTS.catches(
    points=1, behaviour="shows the model the server's description instead of the shop's"
)
def ex1_tests_catch_server_description(reference: ModuleType, rng: random.Random) -> dict[str, Any]:
    original = reference.join

    def join(advertised: list[dict[str, Any]]) -> dict[str, Any]:
        answer: dict[str, Any] = original(advertised)
        words = {
            tool.get("name"): tool.get("description")
            for tool in advertised
            if isinstance(tool, dict)
        }
        remote = {d.name: d.remote_name for d in reference.SHOP_DECLARATIONS}
        for item in answer["offered"]:
            item["description"] = words.get(remote.get(item["name"]), item["description"])
        return answer

    return {"join": join}
