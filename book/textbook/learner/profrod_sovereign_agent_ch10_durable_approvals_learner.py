"""Chapter 10 learner file: Friday's store, the morning's model, and the five effect classes.

The runtime for approvals is the book's package, `sovereign_agent.approvals`;
these are the definitions the chapter prints: the fixture and the model, then
section 10.11's effect classes, the `ExecutableTool` that declares them, and
the shop's tool factories and chapter 8's two readers, each tool with its
classes. Importing this file prints nothing and touches no file.
"""

import copy
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Generic, Protocol

from sovereign_agent.approvals import add_operator, set_weekly_limit
from sovereign_agent.documents import (
    READ_DOCUMENT,
    READS_ONLY,
    DocumentArguments,
    DocumentError,
    delimited,
    read_document_text,
)
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.shop import (
    PRICES_PENCE,
    SHOP_TOOL_NAMES,
    DraftArguments,
    NoArguments,
    ProductArguments,
    draft_order,
    stock_report,
    supplier_quote,
)
from sovereign_agent.skills import (
    LOAD_SKILL,
    OUTSIDE,
    OUTSIDE_SKILL_KEEPS,
    SHOP_OWN,
    Provenance,
    Skill,
    SkillArguments,
    skill_catalogue,
)
from sovereign_agent.store import (
    expect_delivery,
    open_store,
    read_products,
    reserve,
    save_draft,
    seed_store,
    store_quote,
)
from sovereign_agent.tools import (
    ArgumentsT,
    Dispatcher,
    Narrow,
    Setup,
    ToolCall,
    parameters_schema,
)

SHOP = {
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]
}


def friday_store(path: Path) -> Path:
    """Chapter 6's Friday, then this chapter's fixture: two operators and a 5,000 pence week."""
    store = open_store(path)
    seed_store(store, SHOP, PRICES_PENCE)
    reserve(store, "SKU-VANILLA", 3)
    reserve(store, "SKU-CHOCOLATE", 2)
    expect_delivery(store, "SKU-STRAWBERRY", 4)
    add_operator(store, "lucy")
    add_operator(store, "sam")
    set_weekly_limit(store, 5000)
    store.close()
    return path


def order_what_is_needed(messages: Sequence[Message]) -> AssistantMessage:
    """A scripted model's second step: order every sku the stock report needs, most first."""
    report = json.loads(str(messages[-1].content))["value"]
    needed = sorted((row for row in report if row["needed"] > 0), key=lambda r: -r["needed"])
    return AssistantMessage(
        tool_calls=tuple(
            AssistantToolCall(
                id=f"order-{row['sku']}",
                name="place_order",
                arguments_json=json.dumps({"sku": row["sku"], "quantity": row["needed"]}),
            )
            for row in needed
        )
    )


class Effect(StrEnum):
    """One thing a call can do to the world."""

    READ = "read"
    WRITE = "write"
    MONEY = "money"
    EGRESS = "egress"
    CODE = "code"


# What chapter 2's `consequential=False` stands for: a tool that only reads.
NOT_CONSEQUENTIAL = frozenset({Effect.READ})
# What `consequential=True` stands for when a tool says nothing more: every
# class beyond reading. Nobody said which, so every policy treats it as the
# worst of them: approvals ask for it, untrusted text removes it.
CONSEQUENTIAL = frozenset({Effect.WRITE, Effect.MONEY, Effect.EGRESS, Effect.CODE})
# The classes for which a call needs the dispatcher's write authority
# (chapter 2's step 3): spending and running code. Writing the shop's own
# records and asking a remote server a question do not; other rules hold those.
NEEDS_AUTHORITY = frozenset({Effect.MONEY, Effect.CODE})
# The classes an approval must cover (chapter 10): every call that can spend.
NEEDS_APPROVAL = frozenset({Effect.MONEY})
# All a run keeps once it has read untrusted text (chapter 8): reading.
UNTRUSTED_TEXT_KEEPS = frozenset({Effect.READ})


class Classed(Protocol):
    """Anything that declares what it can do: an `ExecutableTool`."""

    @property
    def effects(self) -> frozenset[Effect]: ...


def classes_of_consequential(consequential: bool) -> frozenset[Effect]:
    """The classes a tool declared only with chapter 2's boolean stands for."""
    return CONSEQUENTIAL if consequential else NOT_CONSEQUENTIAL


def needs_authority(classes: Iterable[Effect]) -> bool:
    """Chapter 2's boolean, worked out from the classes: can the call spend, or run code?"""
    return not NEEDS_AUTHORITY.isdisjoint(classes)


def kept_after_untrusted_text(tools: Mapping[str, Classed]) -> frozenset[str]:
    """The names a run keeps once it has read untrusted text: the tools declared to only read.

    Worked out from the classes, not listed by name, so a tool added later is
    kept or removed by what it declares. Only a declaration counts: a tool
    that declares no classes is removed, whatever its boolean says, as
    chapter 8's list removed every tool it did not name.
    """
    return frozenset(
        name
        for name, tool in tools.items()
        if tool.effects and tool.effects <= UNTRUSTED_TEXT_KEEPS
    )


@dataclass(frozen=True)
class ExecutableTool(Generic[ArgumentsT]):
    """One tool: what the model is told about it, what it can do, and the code that really runs.

    `effects` are its effect classes, the primary fact; `consequential`,
    chapter 2's boolean, is worked out from them. A tool that declares no
    classes is read by its boolean, exactly as `classes_of_consequential`
    says, and `effect_classes` names what that stands for. Frozen, so that
    ordinary assignment cannot re-point a registered tool at another handler,
    or take a class away; a guard against mistakes, not a wall against code
    that sets out to break it.
    """

    name: str
    description: str
    arguments: type[ArgumentsT]
    handler: Callable[[ArgumentsT], Any]
    consequential: bool = False
    effects: frozenset[Effect] = frozenset()

    def __post_init__(self) -> None:
        if not isinstance(self.effects, frozenset):
            # A string would be read as its letters, a list could change later:
            # refused, as Narrow refuses them.
            raise TypeError(
                f"{self.name}: effects must be a frozenset, not {type(self.effects).__name__}"
            )
        # Effect("spend") raises ValueError naming the bad class: a typo is loud.
        declared = frozenset(Effect(effect) for effect in self.effects)
        object.__setattr__(self, "effects", declared)
        if not declared:
            return
        if self.consequential and not needs_authority(declared):
            # Two declarations that disagree: which one would the dispatcher obey?
            classes = ", ".join(sorted(declared))
            raise ValueError(
                f"{self.name}: consequential, but its classes ({classes}) need no authority"
            )
        object.__setattr__(self, "consequential", needs_authority(declared))

    @property
    def effect_classes(self) -> frozenset[Effect]:
        """What a call can do: the declared classes, or what chapter 2's boolean stands for."""
        return self.effects or classes_of_consequential(self.consequential)

    def schema(self) -> dict[str, Any]:
        """The function schema a model sees; derived from the argument model so it cannot drift."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters_schema(self.arguments),
            },
        }


def build_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    allowed: Iterable[str] = SHOP_TOOL_NAMES,
    before_write: Callable[[ToolCall], None] | None = None,
    hints: bool = False,
) -> Dispatcher:
    """A dispatcher over its own copy of the shop, so no two runs share stock."""
    products = copy.deepcopy(list(shop["products"]))
    price_list = dict(PRICES_PENCE if prices is None else prices)
    names = sorted(allowed)
    tools = (
        ExecutableTool(
            name="list_stock",
            description="Every product with its stock, its target and the tubs needed.",
            arguments=NoArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda _: stock_report(products),
        ),
        ExecutableTool(
            name="supplier",
            description="The supplier's quote for one sku, in integer pence.",
            arguments=ProductArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda args: supplier_quote(price_list, args.sku),
        ),
        ExecutableTool(
            name="draft_order",
            description="Draft (never place) a re-order for exactly the tubs needed.",
            arguments=DraftArguments,
            effects=frozenset({Effect.WRITE}),
            handler=lambda args: draft_order(products, price_list, args.sku, args.quantity),
        ),
    )
    # The rows are this dispatcher's own, so a trace that writes them when a run
    # starts records the stock that run began with. An authority is code, not
    # data: a dispatcher with one has no setup a replay could rebuild.
    setup = Setup(
        "sovereign_agent.shop:build_tools",
        {"shop": {"products": products}, "prices": price_list, "allowed": names, "hints": hints},
    )
    return Dispatcher(
        tools,
        allowed=names,
        before_write=before_write,
        hints=hints,
        setup=setup if before_write is None else None,
    )


def build_store_tools(
    connection: sqlite3.Connection,
    *,
    allowed: Iterable[str] = SHOP_TOOL_NAMES,
    before_write: Callable[[ToolCall], None] | None = None,
) -> Dispatcher:
    """Chapter 2's three tools over the store: the same names, schemas and observations."""
    tools = (
        ExecutableTool(
            name="list_stock",
            description="Every product with its stock, its target and the tubs needed.",
            arguments=NoArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda _: stock_report(read_products(connection)),
        ),
        ExecutableTool(
            name="supplier",
            description="The supplier's quote for one sku, in integer pence.",
            arguments=ProductArguments,
            effects=frozenset({Effect.READ}),
            handler=lambda args: store_quote(connection, args.sku),
        ),
        ExecutableTool(
            name="draft_order",
            description="Draft (never place) a re-order for exactly the tubs needed.",
            arguments=DraftArguments,
            effects=frozenset({Effect.WRITE}),
            handler=lambda args: save_draft(connection, args.sku, args.quantity),
        ),
    )
    return Dispatcher(tools, allowed=allowed, before_write=before_write)


def build_document_tools(
    shop: Mapping[str, Any],
    prices: Mapping[str, int] | None = None,
    *,
    documents_root: str,
    allowed: Iterable[str] = (*SHOP_TOOL_NAMES, READ_DOCUMENT),
    before_write: Callable[[ToolCall], None] | None = None,
    hints: bool = False,
) -> Dispatcher:
    """One dispatcher: Lucy's shop tools, and `read_document` over the notes in `documents_root`."""
    root = Path(documents_root).resolve()
    if not root.is_dir():
        raise DocumentError(documents_root, "no such documents folder")
    shop_tools = build_tools(shop, prices, hints=hints)
    assert shop_tools.setup is not None  # build_tools records one when it has no authority
    # What a read keeps, worked out from the tools' effect classes (chapter 10):
    # the shop's tools that only read, and read_document itself, which only reads.
    keep = kept_after_untrusted_text(shop_tools.tools) | {READ_DOCUMENT}
    names = sorted(allowed)
    # The shop's own recipe plus where the notes are: a replay builds the same
    # tools, and reads the notes as they are on the day of the replay.
    setup = Setup(
        "sovereign_agent.documents:build_document_tools",
        {**shop_tools.setup.arguments, "documents_root": str(root), "allowed": names},
    )
    return Dispatcher(
        [*shop_tools.tools.values(), read_document_tool(root, keep=keep)],
        allowed=names,
        before_write=before_write,
        hints=hints,
        setup=setup if before_write is None else None,
    )


def read_document_tool(
    root: Path, *, keep: frozenset[str] = READS_ONLY
) -> ExecutableTool[DocumentArguments]:
    """The tool that reads one note from the folder `root`, and narrows its run to `keep`."""

    def read(arguments: DocumentArguments) -> Narrow:
        text = read_document_text(root, arguments.name)
        # Only a read that succeeded narrows: a refused name let no text in.
        return Narrow(
            delimited(arguments.name, text),
            keep=keep,
            reason=f"untrusted text: {arguments.name}",
        )

    return ExecutableTool(
        name=READ_DOCUMENT,
        description=(
            "Read one of the supplier's notes, by its file name. Its text comes from "
            "outside the shop: once a note is read, this run keeps only the tools that "
            "change nothing."
        ),
        arguments=DocumentArguments,
        effects=frozenset({Effect.READ}),
        handler=read,
    )


def load_skill_tool(
    skills: Sequence[Skill], *, provenance: Provenance = OUTSIDE
) -> ExecutableTool[SkillArguments]:
    """The tool that hands the model one skill's instructions, and narrows the run.

    A skill of the shop's own narrows the run to the tools it lists. A skill
    from outside is untrusted text, like a supplier's note: loading it keeps
    only the tools that change nothing, whatever it lists, and when it lists none.
    """
    if provenance not in (SHOP_OWN, OUTSIDE):
        raise ValueError(f"provenance must be {SHOP_OWN!r} or {OUTSIDE!r}, not {provenance!r}")
    by_name = {skill.name: skill for skill in skills}
    if len(by_name) < len(skills):
        raise ValueError("two skills share a name")

    def load(arguments: SkillArguments) -> Any:
        skill = by_name[arguments.skill]
        value = {"skill": skill.name, "instructions": skill.instructions}
        if provenance == OUTSIDE:
            # Its own list can narrow further, never keep a tool that writes.
            listed = OUTSIDE_SKILL_KEEPS if skill.allowed_tools is None else skill.allowed_tools
            return Narrow(
                value, keep=OUTSIDE_SKILL_KEEPS & listed, reason=f"outside skill {skill.name}"
            )
        if skill.allowed_tools is None:
            return value
        return Narrow(value, keep=skill.allowed_tools, reason=f"skill {skill.name}")

    warning = (
        " These skills come from outside the shop: loading one keeps only the tools that "
        "change nothing."
        if provenance == OUTSIDE
        else ""
    )
    return ExecutableTool(
        name=LOAD_SKILL,
        description=(
            "Load a skill: step-by-step instructions for one kind of task. Loading one can "
            f"only narrow the tools of this run, to the tools the skill lists.{warning} Skills:\n"
            + skill_catalogue(skills)
        ),
        arguments=SkillArguments,
        effects=frozenset({Effect.READ}),
        handler=load,
    )
