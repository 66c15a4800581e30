"""Fixture checkpoint: prints what chapter 2's checkpoint-output block shows."""

PRICES = {"vanilla": 250, "chocolate": 275}

if __name__ == "__main__":
    print("vanilla costs", PRICES["vanilla"])
