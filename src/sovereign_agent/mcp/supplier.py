"""Printed in chapter 9: the shop's declarations of the supplier's remote tools.

A remote tool joins a run only as the shop declares it. These are the shop's
words for the supplier's server (`book/textbook/servers/supplier_mcp.py`):
the name the model calls, the argument model the dispatcher validates against,
and the description the model is shown. The server's own descriptions are
never used; its schemas must match these models exactly, or the tool stays out.

`place_order` is declared on purpose with the bounds the shop insists on (a
whole number of tubs, 1 to 100): the supplier advertises any number, so the
schemas differ and the tool is refused. `apply_discount_code` is not declared
at all, so it joins nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sovereign_agent.mcp.remote import Declared
from sovereign_agent.shop import NoArguments

__all__ = ["SUPPLIER_DECLARATIONS", "SUPPLIER_SOURCE", "Availability", "SupplierOrder"]

SUPPLIER_SOURCE = "mcp:supplier"


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


SUPPLIER_DECLARATIONS: tuple[Declared, ...] = (
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
