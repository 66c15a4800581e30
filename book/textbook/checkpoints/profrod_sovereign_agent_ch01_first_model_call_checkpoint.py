"""Chapter 1 checkpoint: Lucy's shop snapshot and her morning brief.

Later chapters load `SHOP` with `runpy.run_path(...)["SHOP"]`, so importing this
file defines data and nothing else; the model call runs only from `main()`.
"""

SHOP = {
    "name": "Lucy's Ice Cream",
    "products": [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ],
}


def main() -> None:
    raise SystemExit("chapter 1's model call is not written yet")


if __name__ == "__main__":
    main()
