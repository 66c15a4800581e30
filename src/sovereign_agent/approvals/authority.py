"""Support the book does not print: chapter 2's write authority as a query of the approvals table.

`ApprovalAuthority` is a `before_write`. The dispatcher asks it for every
call whose effect classes need an authority (`money` or `code`, chapter 10),
so every call that can spend meets it. For such a call it looks
up the approval bound to that tool and those exact arguments: an approved,
unexpired one lets the handler run; a pending one, or none (then it records
a PENDING one), stops the run `awaiting_approval`; a denied one stops it
`denied`, with no retry. The handler itself uses the approval (status USED)
in the same transaction as its own writes, so an order and the use of its
approval commit together or not at all.

Chapter 3's loop prints its stop reasons and is not changed: the authority
refuses the call (the model is told `tool_failed`, nothing ran) and notes
why; `run_with_approvals` then ends the run before the model is asked again,
and says so in a `GatedRun`.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel

from sovereign_agent.approvals.ledger import (
    DEFAULT_LIFETIME,
    ApprovalRefused,
    Clock,
    canonical_arguments,
    expire_due,
    find_current,
    request_approval,
    seconds,
    use_approval,
    utc_now,
)
from sovereign_agent.effects import Effect
from sovereign_agent.loop import RunRecord, run_task
from sovereign_agent.models import Message, ModelClient, ModelReply
from sovereign_agent.shop import SHOP_TOOL_NAMES, DraftArguments
from sovereign_agent.store import build_store_tools, read_price, read_product, transaction
from sovereign_agent.tools import Dispatcher, ExecutableTool, ToolCall
from sovereign_agent.trace.recorder import Recorder

__all__ = [
    "APPROVED_TOOL_NAMES",
    "ApprovalAuthority",
    "ApprovalStop",
    "GatedRun",
    "OrderArguments",
    "build_approved_store_tools",
    "order_amount",
    "place_order",
    "run_with_approvals",
]

ApprovalStop = Literal["awaiting_approval", "denied"]
APPROVED_TOOL_NAMES = (*SHOP_TOOL_NAMES, "place_order")


class OrderArguments(DraftArguments):
    """An order: the sku and the tubs, as a draft has them. The price is the shop's."""


def order_amount(connection: sqlite3.Connection, arguments: BaseModel) -> int:
    """What an order costs at today's price, in pence; an unknown sku fails."""
    assert isinstance(arguments, OrderArguments)
    read_product(connection, arguments.sku)
    return arguments.quantity * read_price(connection, arguments.sku)


@dataclass(frozen=True)
class Priced:
    """How the authority reads one consequential tool: its argument model and its cost."""

    arguments: type[BaseModel]
    amount: Callable[[sqlite3.Connection, BaseModel], int]


class ApprovalAuthority:
    """A `before_write` that asks the store, never the process, whether a call is approved.

    One authority belongs to one run: `run_id` is written on every approval it
    asks for, and `stop` says why the run must end, once a call has made it so.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        priced: dict[str, Priced],
        *,
        run_id: str | None = None,
        clock: Clock = utc_now,
        lifetime: timedelta = DEFAULT_LIFETIME,
    ) -> None:
        self._connection = connection
        self._priced = dict(priced)
        self.run_id = run_id or uuid.uuid4().hex
        self.clock = clock
        self._lifetime = lifetime
        self.stop: ApprovalStop | None = None
        self.awaiting: list[int] = []
        self.denied: list[int] = []

    def __call__(self, call: ToolCall) -> None:
        priced = self._priced.get(call.name)
        if priced is None:
            # A consequential tool nobody priced can never be approved.
            raise ApprovalRefused("unpriced_tool", f"{call.name} has no amount rule")
        # The dispatcher validated these already; validating again gives the
        # same model, from which the canonical text is made.
        arguments = priced.arguments.model_validate(call.arguments, strict=True)
        canonical = canonical_arguments(arguments)
        now = seconds(self.clock)
        with transaction(self._connection):
            expire_due(self._connection, now)
            current = find_current(self._connection, call.name, canonical, now)
            if current is None:
                amount = priced.amount(self._connection, arguments)
                current = request_approval(
                    self._connection,
                    call.name,
                    canonical,
                    amount,
                    self.run_id,
                    now=now,
                    lifetime=self._lifetime,
                )
        # Raised after the commit: the new PENDING row must outlive this refusal.
        if current.status == "APPROVED":
            return
        if current.status == "DENIED":
            self.stop = "denied"
            self.denied.append(current.id)
            raise ApprovalRefused("denied", f"approval {current.id} was denied")
        if self.stop is None:
            self.stop = "awaiting_approval"
        if current.id not in self.awaiting:
            self.awaiting.append(current.id)
        raise ApprovalRefused("awaiting_approval", f"approval {current.id} is pending")


def place_order(
    connection: sqlite3.Connection, arguments: OrderArguments, *, clock: Clock = utc_now
) -> dict[str, Any]:
    """Record an order (status ORDERED) and use its approval, in one transaction.

    The approval is looked up again under the write lock: between the
    authority's check and this line another process may have used, revoked
    or outlived it. An approval for an amount the price no longer gives is
    refused, so a price rise never spends more than was approved.
    """
    canonical = canonical_arguments(arguments)
    now = seconds(clock)
    with transaction(connection):
        approval = use_approval(connection, "place_order", canonical, now)
        unit_cost = read_price(connection, arguments.sku)
        if arguments.quantity * unit_cost != approval.amount_pence:
            raise ApprovalRefused(
                "price_changed",
                f"approval {approval.id} is for {approval.amount_pence:,} pence;"
                f" the order now costs {arguments.quantity * unit_cost:,} pence",
            )
        cursor = connection.execute(
            "INSERT INTO orders (sku, quantity, unit_cost_pence, approval_id, status)"
            " VALUES (?, ?, ?, ?, 'ORDERED')",
            (arguments.sku, arguments.quantity, unit_cost, approval.id),
        )
    return {
        "order_id": cursor.lastrowid,
        "sku": arguments.sku,
        "quantity": arguments.quantity,
        "unit_cost_pence": unit_cost,
        "total_pence": approval.amount_pence,
        "approval_id": approval.id,
        "status": "ORDERED",
    }


def build_approved_store_tools(
    connection: sqlite3.Connection,
    *,
    allowed: Iterable[str] = APPROVED_TOOL_NAMES,
    run_id: str | None = None,
    clock: Clock = utc_now,
    lifetime: timedelta = DEFAULT_LIFETIME,
) -> tuple[Dispatcher, ApprovalAuthority]:
    """Chapter 5's store tools plus `place_order`, a money tool, behind an approval authority."""
    authority = ApprovalAuthority(
        connection,
        {"place_order": Priced(OrderArguments, order_amount)},
        run_id=run_id,
        clock=clock,
        lifetime=lifetime,
    )
    names = frozenset(allowed)
    store_tools = build_store_tools(connection, allowed=names & set(SHOP_TOOL_NAMES))
    order = ExecutableTool(
        name="place_order",
        description="Place an order for tubs. It runs only with an operator's approval.",
        arguments=OrderArguments,
        handler=lambda args: place_order(connection, args, clock=clock),
        # It records an order (write) that the shop must pay for (money):
        # money is what makes the dispatcher ask this authority first.
        effects=frozenset({Effect.WRITE, Effect.MONEY}),
    )
    dispatcher = Dispatcher(
        (*store_tools.tools.values(), order), allowed=names, before_write=authority
    )
    return dispatcher, authority


class _Halted(Exception):
    """Raised in place of the model's next step once the authority has stopped the run."""


class _GatedModel:
    """The run's model, asked only while no approval has stopped the run."""

    def __init__(self, model: ModelClient, authority: ApprovalAuthority) -> None:
        self._model = model
        self._authority = authority
        self.messages: tuple[Message, ...] = ()

    @property
    def label(self) -> str:
        return self._model.label

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        self.messages = tuple(messages)
        if self._authority.stop is not None:
            # Every call of the last turn has been answered: stop before the
            # model could ask again, so a pending call is never retried.
            raise _Halted(self._authority.stop)
        return self._model.complete(messages, tools=tools)


@dataclass(frozen=True)
class GatedRun:
    """How a run under approvals ended.

    `stop_reason` is chapter 3's reason, or `awaiting_approval` or `denied`.
    `record` is chapter 3's record when the loop ended by itself, None when
    an approval stopped it; `messages` is the conversation either way.
    """

    stop_reason: str
    messages: tuple[Message, ...]
    record: RunRecord | None
    awaiting: tuple[int, ...] = field(default=())
    denied: tuple[int, ...] = field(default=())


def run_with_approvals(
    model: ModelClient,
    dispatcher: Dispatcher,
    authority: ApprovalAuthority,
    task: str,
    *,
    max_steps: int,
    max_tool_calls: int,
    system: str | None = None,
    recorder: Recorder | None = None,
) -> GatedRun:
    """Chapter 3's loop, ended at the first turn after which an approval stopped the run.

    A run that an approval stops ends inside `run_task`, before its record
    is built: its trace (SOVEREIGN_TRACE, or `recorder`) holds every event up
    to the last observation, and no `run_finished`. The stop is in the
    returned `GatedRun`, and the approvals it waits for are in the store.
    """
    gated = _GatedModel(model, authority)
    try:
        record = run_task(
            gated,
            dispatcher,
            task,
            max_steps=max_steps,
            max_tool_calls=max_tool_calls,
            system=system,
            recorder=recorder,
        )
    except _Halted as halted:
        return GatedRun(
            stop_reason=str(halted),
            messages=gated.messages,
            record=None,
            awaiting=tuple(authority.awaiting),
            denied=tuple(authority.denied),
        )
    return GatedRun(
        stop_reason=authority.stop or record.stop_reason.value,
        messages=record.messages,
        record=record,
        awaiting=tuple(authority.awaiting),
        denied=tuple(authority.denied),
    )
