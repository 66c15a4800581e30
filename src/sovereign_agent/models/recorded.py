"""Support the book does not print: chapter 1's recorded reply to the morning brief.

A recording, not a model: it says the same words whatever it is sent. That is
why its label says so, and why a second call fails instead of repeating it.
"""

from __future__ import annotations

from sovereign_agent.models.messages import AssistantMessage
from sovereign_agent.models.offline import ScriptedModel

__all__ = ["RECORDED_LABEL", "RECORDED_MORNING_BRIEF", "recorded_morning_brief_model"]

RECORDED_LABEL = "offline (recorded chapter 1 reply; no model was called)"

RECORDED_MORNING_BRIEF = """\
Good morning, Lucy. Here is today's brief, from the stock snapshot you sent.

Re-order today:
- Vanilla (SKU-VANILLA): 2 tubs on hand, target 8. Order 6.
- Strawberry (SKU-STRAWBERRY): 1 tub on hand, target 5. Order 4.

No order needed:
- Chocolate (SKU-CHOCOLATE): 7 tubs on hand, target 6.

These figures are only as fresh as the snapshot. If a delivery has arrived \
since it was taken, count the freezer again before you order."""


def recorded_morning_brief_model() -> ScriptedModel:
    """A fresh one-step script each time, so one reader's call never uses up another's."""
    return ScriptedModel([AssistantMessage(content=RECORDED_MORNING_BRIEF)], label=RECORDED_LABEL)
