"""Support the book does not print: the shop's tools with `sku` as an enum of the catalogue.

Chapter 2 types `sku` as a free string (1 to 100 characters) and lets the
handler refuse a sku the shop does not stock. The other way a tool author
can go is to write the catalogue into the schema: `sku` may be only one of
the skus listed, so the model is shown every valid value and validation
refuses any other before a handler runs. Section 4.13 compares the two with
the evaluation's offline stand-in; this module builds the enum side.

The catalogue is code here, as it is wherever an enum is written into a
tool's argument model: a new product is a new `CATALOGUE`, hence a new
schema, hence (chapter 4's tool versioning) a new version of every tool that
takes a sku, and a replay of any run recorded before it diverges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from sovereign_agent.evaluate.variants import Descriptions, variant_tools
from sovereign_agent.shop import DraftArguments, ProductArguments
from sovereign_agent.tools import Dispatcher, Setup

__all__ = ["CATALOGUE", "enum_arguments", "enum_sku_tools"]

# The skus the enum lists, in the order the model is shown them.
CATALOGUE: tuple[str, ...] = ("SKU-CHOCOLATE", "SKU-STRAWBERRY", "SKU-VANILLA")


def enum_arguments(
    catalogue: Sequence[str],
) -> tuple[type[ProductArguments], type[DraftArguments]]:
    """Chapter 2's two argument models with `sku` narrowed to one of `catalogue`.

    Subclasses, so strictness, `extra="forbid"` and the quantity's bounds are
    chapter 2's; only the sku's type changes. Both keep their class names, so
    the schema differs from chapter 2's in the sku's line alone.
    """
    if not catalogue or len(set(catalogue)) != len(catalogue):
        raise ValueError("an enum catalogue needs at least one sku, each once")
    sku_type: Any = Literal[tuple(catalogue)]
    sku = (sku_type, Field())
    product: type[ProductArguments] = create_model(
        "ProductArguments", __base__=ProductArguments, sku=sku
    )
    draft: type[DraftArguments] = create_model("DraftArguments", __base__=DraftArguments, sku=sku)
    return product, draft


def enum_sku_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int],
    *,
    descriptions: Descriptions = "full",
    hints: bool = False,
    catalogue: Sequence[str] = CATALOGUE,
) -> Dispatcher:
    """The evaluation's tools (`variant_tools`), with `sku` an enum of `catalogue`.

    A suite names it as a variant's factory. The handlers are chapter 2's:
    a sku the enum lets through but the shop lacks still fails in the handler.
    """
    product, draft = enum_arguments(catalogue)
    base = variant_tools(shop, prices, descriptions=descriptions, hints=hints)
    assert base.setup is not None  # variant_tools always records one
    by_model: dict[type[BaseModel], type[BaseModel]] = {
        ProductArguments: product,
        DraftArguments: draft,
    }
    tools = [
        dataclasses.replace(tool, arguments=by_model.get(tool.arguments, tool.arguments))
        for tool in base.tools.values()
    ]
    # The catalogue is left out of the recipe on purpose: it stands for code,
    # so a replay builds the enum today's code writes, not the recorded one.
    # Not a known setup (trace.setups): a replay names this factory itself.
    setup = Setup("sovereign_agent.evaluate.skus:enum_sku_tools", dict(base.setup.arguments))
    return Dispatcher(tools, allowed=base.allowed, hints=hints, setup=setup)
