"""Support the book does not print: how long, how often and how expensively a run may go on."""

from sovereign_agent.limits.budget import (
    DeadlinePassed,
    LimitedModel,
    MoneyBudgetSpent,
    RunLimitReached,
    Spending,
    TokenBudgetSpent,
)
from sovereign_agent.limits.calls import CallTimedOut, LimitedDispatcher, may_run_concurrently
from sovereign_agent.limits.config import Limits, Price
from sovereign_agent.limits.rate import RateLimit, TokenBucket
from sovereign_agent.limits.run import RunLimits
from sovereign_agent.limits.virtual_time import VirtualTimeLoop

__all__ = [
    "CallTimedOut",
    "DeadlinePassed",
    "LimitedDispatcher",
    "LimitedModel",
    "Limits",
    "MoneyBudgetSpent",
    "Price",
    "RateLimit",
    "RunLimitReached",
    "RunLimits",
    "Spending",
    "TokenBucket",
    "TokenBudgetSpent",
    "VirtualTimeLoop",
    "may_run_concurrently",
]
