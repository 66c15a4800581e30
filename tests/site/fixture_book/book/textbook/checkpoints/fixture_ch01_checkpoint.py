"""Fixture checkpoint: prints what chapter 1's checkpoint-output block shows."""


def replenishment_need(on_hand: int, reorder_point: int) -> int:
    """Never negative: a full freezer needs nothing."""
    return max(0, reorder_point - on_hand)


if __name__ == "__main__":
    print("vanilla needs", replenishment_need(2, 8))
    print("chocolate needs", replenishment_need(7, 6))
