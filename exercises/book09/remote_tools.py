"""Exercise Book 9 (Remote tool servers): the starter. It runs, and does none of the exercises.

The first part is chapter 9's learner file, unchanged: the shop's declarations
of the supplier's tools and the matching that decides which of them join. The
exercises add a declaration (the supplier's new `price_quote`) and the check
that notices a tool the server changed after the shop accepted it. The last
part, "The grader's door", speaks plain JSON in the shape of the `tools` list
of an MCP `tools/list` result: no server runs when this file is graded or
tested, so everything graded is a pure function of the lists a server
advertises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import parameters_schema
from sovereign_agent.trace.format import schema_fingerprint

# --- Chapter 9: the learner file's definitions, unchanged ---------------------


# No docstrings on these models: Pydantic would put one into the schema, and
# the schema is what must match the server's, key for key.
class Availability(BaseModel):
    # One SKU, as the supplier spells them: capital letters only.
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: str = Field(pattern=r"^[A-Z]{1,20}$")


class SupplierOrder(BaseModel):
    # An order the shop would send: a SKU and a whole number of tubs, 1 to 100.
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: str = Field(pattern=r"^[A-Z]{1,20}$")
    quantity: int = Field(ge=1, le=100)


@dataclass(frozen=True)
class Declared:
    """The shop's word for one remote tool: all the model is told, and all the dispatcher checks.

    `name` is what the model calls; `remote` the tool's name on the server, when
    it differs. `description` is the shop's, never the server's.
    """

    name: str
    arguments: type[BaseModel]
    description: str
    consequential: bool = False
    remote: str | None = None

    @property
    def remote_name(self) -> str:
        return self.name if self.remote is None else self.remote


SUPPLIER_DECLARATIONS = (
    Declared(
        name="check_availability",
        arguments=Availability,
        description="How many tubs of one SKU the supplier can deliver next time.",
    ),
    Declared(
        name="next_delivery",
        arguments=NoArguments,
        description="The weekday of the supplier's next delivery.",
    ),
    Declared(
        name="place_order",
        arguments=SupplierOrder,
        description="Order tubs of one SKU from the supplier.",
        consequential=True,
    ),
)

RefusalReason = Literal["schema_mismatch", "undeclared", "not_advertised", "advertised_twice"]


@dataclass(frozen=True)
class Advertised:
    """One tool as a server lists it: its name, its description and its input schema, untrusted."""

    name: str
    description: str | None
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class Refusal:
    """A tool that did not join, and why: for the operator, never for the model."""

    name: str
    reason: RefusalReason


def schema_matches(model: type[BaseModel], advertised: Mapping[str, Any]) -> bool:
    """Whether a server's schema is the declared model's: one fingerprint, key order aside."""
    try:
        return schema_fingerprint(parameters_schema(model)) == schema_fingerprint(advertised)
    except (TypeError, ValueError):
        # Not JSON at all (a set, a NaN): it cannot be the model's schema.
        return False


def match_tools(
    declarations: Iterable[Declared], advertised: Iterable[Advertised]
) -> tuple[tuple[Declared, ...], tuple[Refusal, ...]]:
    """Which declared tools join, and a refusal for every other tool on either side.

    A declared tool joins when the server advertises it once, with a schema
    that matches. Everything the server offers beyond the declarations is
    refused as `undeclared`; a declaration the server does not offer is
    refused as `not_advertised`; a name advertised twice is ambiguous and
    refused whichever copy would have matched.
    """
    offered: dict[str, list[Advertised]] = {}
    for tool in advertised:
        offered.setdefault(tool.name, []).append(tool)
    joined: list[Declared] = []
    refused: list[Refusal] = []
    declared_remote: set[str] = set()
    for declaration in declarations:
        remote = declaration.remote_name
        declared_remote.add(remote)
        copies = offered.get(remote, [])
        if not copies:
            refused.append(Refusal(declaration.name, "not_advertised"))
        elif len(copies) > 1:
            refused.append(Refusal(declaration.name, "advertised_twice"))
        elif not schema_matches(declaration.arguments, copies[0].input_schema):
            refused.append(Refusal(declaration.name, "schema_mismatch"))
        else:
            joined.append(declaration)
    refused.extend(Refusal(name, "undeclared") for name in offered if name not in declared_remote)
    return tuple(joined), tuple(refused)


# --- Exercise 1: the supplier's price quote (Unit A) ------------------------------------

# Exercise 1: declare the supplier's `price_quote` as the shop means it (its
# argument model, the local name `supplier_price_quote`, the shop's description)
# and add that declaration to the tools the shop declares.
SHOP_DECLARATIONS: tuple[Declared, ...] = SUPPLIER_DECLARATIONS


# --- Exercise 2: a tool that changed after the shop checked it (Unit B) -----------------


def changed_tools(
    joined: Iterable[Declared], at_connection: Iterable[Advertised], now: Iterable[Advertised]
) -> frozenset[str]:
    """The local names of the joined tools that `now` no longer advertises as they were checked.

    Exercise 2: a joined tool has changed when the list `now` does not hold it
    exactly once, or holds it with another description or input schema than the
    one copy checked at connection (`at_connection`). Tools that did not join
    never count.
    """
    return frozenset()


# --- Exercise 3 (Unit C, open design): what a server that changed may keep ---------------


def still_offered(
    joined: Iterable[Declared],
    at_connection: Iterable[Advertised],
    relists: Iterable[Iterable[Advertised]],
) -> list[list[str]]:
    """After each later list, the local names of the joined tools the model is still offered.

    Sorted, one list per list in `relists`, in order. Unit C says what Lucy
    needs of a session whose server changes its tools; how it is done is yours.
    """
    raise NotImplementedError("Exercise 3: write still_offered")


# --- The grader's door: plain JSON in, plain JSON out (leave it as it is) ---------------


def _advertised(tools: Iterable[Mapping[str, Any]]) -> list[Advertised]:
    """A `tools/list` result's tools, as the runtime reads them: name, description, input schema."""
    return [
        Advertised(tool["name"], tool.get("description"), tool.get("inputSchema", {}))
        for tool in tools
    ]


def join(advertised: list[dict[str, Any]]) -> dict[str, Any]:
    """Match `advertised` against SHOP_DECLARATIONS: what the model is offered, and what is refused.

    `offered` holds, for each tool that joined, exactly what the shop's model
    would be shown (its name, description and parameters) and whether it is
    consequential; `refused` holds [name, reason] pairs, for the operator.
    """
    joined, refused = match_tools(SHOP_DECLARATIONS, _advertised(advertised))
    offered = [
        {
            "name": declaration.name,
            "description": declaration.description,
            "parameters": parameters_schema(declaration.arguments),
            "consequential": declaration.consequential,
        }
        for declaration in joined
    ]
    return {
        "offered": sorted(offered, key=lambda tool: str(tool["name"])),
        "refused": sorted([refusal.name, refusal.reason] for refusal in refused),
    }


def watch(connection: list[dict[str, Any]], relists: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Join at `connection`, then, for each later list, the joined tools `changed_tools` finds."""
    checked = _advertised(connection)
    joined, _ = match_tools(SHOP_DECLARATIONS, checked)
    return {
        "joined": sorted(declaration.name for declaration in joined),
        "changed": [
            sorted(changed_tools(joined, checked, _advertised(relist))) for relist in relists
        ],
    }


def keep(connection: list[dict[str, Any]], relists: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Join at `connection`, then, after each later list, what `still_offered` keeps offering."""
    checked = _advertised(connection)
    joined, _ = match_tools(SHOP_DECLARATIONS, checked)
    kept = still_offered(joined, checked, [_advertised(relist) for relist in relists])
    return {
        "joined": sorted(declaration.name for declaration in joined),
        "offered": [sorted(names) for names in kept],
    }
