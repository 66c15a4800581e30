"""Support the book does not print: the limits one run is held to, checked when they are written.

Every limit is off until it is set. Times are seconds, money is whole pence
(prices are pence per million tokens, so no fraction of a penny is ever
rounded away before a budget is compared), token counts are whole tokens.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sovereign_agent.limits.rate import RateLimit

__all__ = ["Limits", "Price"]

_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Price(BaseModel):
    """What one model charges, in pence per million tokens read and written."""

    model_config = _CONFIG

    input_pence_per_million: int = Field(ge=0)
    output_pence_per_million: int = Field(ge=0)

    def cost_micropence(self, input_tokens: int, output_tokens: int) -> int:
        """The cost in millionths of a penny: exact, whatever the counts."""
        return (
            input_tokens * self.input_pence_per_million
            + output_tokens * self.output_pence_per_million
        )


class Limits(BaseModel):
    """How long, how often and how expensively one run may go on.

    `read_only` names the tools whose calls may run at the same time as each
    other (chapter 13's concurrency); a consequential tool is never among
    them, whatever this says.
    """

    model_config = _CONFIG

    tool_timeout_s: float | None = Field(default=None, gt=0, le=3_600)
    tool_timeouts_s: dict[str, float] = Field(default_factory=dict)
    tool_rates: dict[str, RateLimit] = Field(default_factory=dict)
    run_rate: RateLimit | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_pence: int | None = Field(default=None, ge=1)
    prices: dict[str, Price] = Field(default_factory=dict)
    deadline_s: float | None = Field(default=None, gt=0, le=86_400)
    read_only: frozenset[str] = frozenset()

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        for name, seconds in self.tool_timeouts_s.items():
            if not 0 < seconds <= 3_600:
                raise ValueError(f"the timeout of {name!r} must be above 0 and at most 3600 s")
        if self.max_pence is not None and not self.prices:
            # A money budget with nothing priced could only stop every run at once.
            raise ValueError("max_pence needs a price for at least one model")
        return self

    def timeout_s(self, tool: str) -> float | None:
        """The seconds a call to `tool` may take, or None for no bound."""
        return self.tool_timeouts_s.get(tool, self.tool_timeout_s)

    def price(self, model: str) -> Price | None:
        """The price of `model`: its own entry, or the longest entry it is a dated version of.

        Providers answer with a dated name (`gpt-4o-2024-08-06` for `gpt-4o`);
        a prefix counts only up to a hyphen, so `gpt-4` never prices `gpt-4o`.
        """
        if model in self.prices:
            return self.prices[model]
        matches = [name for name in self.prices if model.startswith(name + "-")]
        return self.prices[max(matches, key=len)] if matches else None
