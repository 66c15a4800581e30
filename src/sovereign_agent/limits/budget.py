"""Support the book does not print: budgets of tokens and money, and a wall-clock deadline, per run.

`LimitedModel` stands between the loop and a model client. Before each
request it asks whether the run is past its deadline, and whether the
request would certainly overspend: a conversation only grows, so the next
request reads at least every token the last one read and wrote. When it
would, the request is never sent, and the run stops with a `RunLimitReached`
naming the limit (`deadline`, `token_budget`, `money_budget`). After each
reply it adds what the provider's usage fields say was spent; a reply
without them cannot be held to a budget, and stops the run too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sovereign_agent.limits.config import Limits
from sovereign_agent.models import Message, ModelClient, ModelError, ModelReply

__all__ = [
    "DeadlinePassed",
    "LimitedModel",
    "MoneyBudgetSpent",
    "RunLimitReached",
    "Spending",
    "TokenBudgetSpent",
]


class RunLimitReached(ModelError):
    """The run stops here: one of its limits says no more requests. `limit` names which."""

    limit = "run_limit"

    def __init__(self, detail: str) -> None:
        super().__init__(f"{self.limit}: {detail}")


class DeadlinePassed(RunLimitReached):
    limit = "deadline"


class TokenBudgetSpent(RunLimitReached):
    limit = "token_budget"


class MoneyBudgetSpent(RunLimitReached):
    limit = "money_budget"


class Spending:
    """What one run has spent on model calls, and what its next request will cost at least."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self.tokens = 0
        self.micropence = 0
        # Tokens the next request reads at the least: all the last one read and wrote.
        self.next_at_least = 0
        self.model: str | None = None

    def check(self) -> None:
        """Raise before a request that would take the run past a budget."""
        limits = self._limits
        if limits.max_tokens is not None and self.tokens + self.next_at_least > limits.max_tokens:
            raise TokenBudgetSpent(
                f"{self.tokens} of {limits.max_tokens} tokens spent; "
                f"the next request reads at least {self.next_at_least}"
            )
        if limits.max_pence is not None and self.model is not None:
            price = limits.price(self.model)
            assert price is not None  # `add` refuses a reply from a model with no price
            least = price.cost_micropence(self.next_at_least, 0)
            if self.micropence + least > limits.max_pence * 1_000_000:
                raise MoneyBudgetSpent(
                    f"{_pence(self.micropence)} of {limits.max_pence:,} pence spent; "
                    f"the next request costs at least {_pence(least)}"
                )

    def add(self, reply: ModelReply) -> None:
        """Count one reply; raise when it cannot be counted, or took the run past a budget."""
        limits = self._limits
        if limits.max_tokens is None and limits.max_pence is None:
            return
        usage = reply.usage
        if usage is None:
            error = TokenBudgetSpent if limits.max_tokens is not None else MoneyBudgetSpent
            raise error(f"the reply from {reply.model!r} carried no token counts")
        self.tokens += usage.input_tokens + usage.output_tokens
        self.next_at_least = usage.input_tokens + usage.output_tokens
        if limits.max_pence is not None:
            price = limits.price(reply.model)
            if price is None:
                raise MoneyBudgetSpent(f"no price for the model {reply.model!r}")
            self.model = reply.model
            self.micropence += price.cost_micropence(usage.input_tokens, usage.output_tokens)
        # A reply that itself went past a budget is kept (it was paid for),
        # and the check before the next request stops the run.


def _pence(micropence: int) -> str:
    # The book's one money format, with the four decimals a request's cost needs:
    # a model call costs a fraction of a penny.
    return f"{micropence / 1_000_000:,.4f} pence"


class LimitedModel:
    """A `ModelClient` that refuses to send a request past the run's deadline or budgets."""

    def __init__(
        self,
        model: ModelClient,
        limits: Limits,
        *,
        clock: Callable[[], float],
        started: float,
        spending: Spending | None = None,
    ) -> None:
        self._model = model
        self._limits = limits
        self._clock = clock
        self._started = started
        self.spending = Spending(limits) if spending is None else spending

    @property
    def label(self) -> str:
        return self._model.label

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        deadline = self._limits.deadline_s
        if deadline is not None:
            elapsed = self._clock() - self._started
            if elapsed >= deadline:
                raise DeadlinePassed(f"{elapsed:.1f} s of {deadline:g} s gone")
        self.spending.check()
        reply = self._model.complete(messages, tools=tools)
        self.spending.add(reply)
        return reply
