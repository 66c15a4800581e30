"""Exercise 2 (Unit A): the snapshot says when it was taken, and the model is told so."""

from __future__ import annotations

import json

from morning_brief import SHOP, build_brief_request, morning_brief, snapshot_json

from sovereign_agent.models import AssistantMessage, ScriptedModel


def test_the_snapshot_carries_taken_at_as_a_top_level_field() -> None:
    data = json.loads(snapshot_json(SHOP, "2026-06-01T07:30"))
    assert data["taken_at"] == "2026-06-01T07:30"
    assert [row["on_hand"] for row in data["products"]] == [2, 7, 1]


def test_the_text_is_stable_with_sorted_keys() -> None:
    text = snapshot_json(SHOP, "2026-06-01T07:30")
    assert text == snapshot_json(SHOP, "2026-06-01T07:30")
    assert text.index('"name"') < text.index('"products"') < text.index('"taken_at"')
    assert text.startswith('{\n  "name"')


def test_the_rules_explain_taken_at() -> None:
    system, user = build_brief_request(SHOP, "2026-06-01T07:30")
    assert system.role == "system" and "taken_at" in system.content
    assert user.role == "user" and '"taken_at": "2026-06-01T07:30"' in user.content


def test_the_model_receives_the_time_it_can_quote() -> None:
    def quote_the_time(messages):
        taken_at = json.loads(messages[-1].content.split("\n\n")[1])["taken_at"]
        return AssistantMessage(content=f"Figures as of {taken_at}.")

    model = ScriptedModel([quote_the_time])
    assert morning_brief(model, SHOP, "2026-06-01T07:30") == "Figures as of 2026-06-01T07:30."
