"""Fixture learner file: every definition is a listing of chapter 1, unchanged."""

from __future__ import annotations


def replenishment_need(on_hand: int, reorder_point: int) -> int:
    """Never negative: a full freezer needs nothing."""
    return max(0, reorder_point - on_hand)


class Freezer:
    def __init__(self, tubs: dict[str, int]) -> None:
        self.tubs = dict(tubs)
