"""Support the book does not print: durable approvals for consequential calls (chapter 10).

`ledger` keeps approvals, operators and the weekly budget in the store;
`authority` makes chapter 2's `before_write` a query of them and adds the
consequential `place_order`; `python -m sovereign_agent.approvals` is the
operator's command.
"""

from sovereign_agent.approvals.authority import (
    APPROVED_TOOL_NAMES,
    ApprovalAuthority,
    GatedRun,
    OrderArguments,
    build_approved_store_tools,
    place_order,
    run_with_approvals,
)
from sovereign_agent.approvals.ledger import (
    DEFAULT_LIFETIME,
    Approval,
    ApprovalRefused,
    Budget,
    add_operator,
    approve,
    budget,
    canonical_arguments,
    deny,
    list_approvals,
    revoke,
    set_weekly_limit,
)

__all__ = [
    "APPROVED_TOOL_NAMES",
    "DEFAULT_LIFETIME",
    "Approval",
    "ApprovalAuthority",
    "ApprovalRefused",
    "Budget",
    "GatedRun",
    "OrderArguments",
    "add_operator",
    "approve",
    "budget",
    "build_approved_store_tools",
    "canonical_arguments",
    "deny",
    "list_approvals",
    "place_order",
    "revoke",
    "run_with_approvals",
    "set_weekly_limit",
]
