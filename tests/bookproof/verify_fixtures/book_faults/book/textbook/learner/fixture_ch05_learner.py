def replenishment_need(on_hand: int, reorder_point: int) -> int:
    return max(0, reorder_point - on_hand)
