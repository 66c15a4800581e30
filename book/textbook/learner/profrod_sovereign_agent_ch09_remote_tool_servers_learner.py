"""Chapter 9, as you saved it: remote tools that join a run only as the shop declares them.

A declaration is the shop's word for a remote tool: its name, its argument
model, its description and whether it is consequential. At connection a
server's advertised input schema must equal the declared model's schema
(chapter 4's fingerprint), or the tool is refused as `schema_mismatch`; a tool
the shop did not declare joins nothing. The connection itself (the process,
the SDK's session, timeouts, the narrowing when a tool changes) comes from the
book's package, `sovereign_agent.mcp.remote`. Importing this file defines
things and prints nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.shop import NoArguments
from sovereign_agent.tools import parameters_schema
from sovereign_agent.trace.format import schema_fingerprint


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
