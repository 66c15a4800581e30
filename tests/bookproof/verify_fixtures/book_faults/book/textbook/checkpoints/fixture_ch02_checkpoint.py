"""Fixture checkpoint."""

if __name__ == "__main__":
    print("vanilla needs", max(0, 8 - 2))
