"""Fixture checkpoint: prints a gigabyte, as fast as it can."""

import os


def replenishment_need(on_hand: int, reorder_point: int) -> int:
    """Never negative: a full freezer needs nothing."""
    return max(0, reorder_point - on_hand)


if __name__ == "__main__":
    block = b"vanilla needs 6\n" * 65_536
    for _ in range(1_024):
        os.write(1, block)
