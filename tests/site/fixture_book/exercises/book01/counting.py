"""The starter a fixture notebook imports."""


def count_tubs(tubs: list[int]) -> int:
    return sum(tubs)
