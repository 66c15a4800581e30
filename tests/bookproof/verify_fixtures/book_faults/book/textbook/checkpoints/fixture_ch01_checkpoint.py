"""Fixture checkpoint whose output has drifted from the chapter."""

if __name__ == "__main__":
    print("vanilla needs", max(0, 9 - 2))
