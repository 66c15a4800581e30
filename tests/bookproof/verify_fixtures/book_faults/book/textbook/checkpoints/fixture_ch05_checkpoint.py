"""Fixture checkpoint: prints the right output from code the chapter never taught."""


def replenishment_need(on_hand: int, reorder_point: int) -> int:
    return reorder_point - on_hand


def main() -> None:
    print("vanilla needs", replenishment_need(2, 8))


if __name__ == "__main__":
    main()
