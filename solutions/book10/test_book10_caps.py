"""Unit A's tests: each operator's spending cap (Exercise 1).

Each test gets its own store in pytest's tmp_path: Friday, two operators
(lucy and sam) and a weekly limit of 5,000 pence. The cafe's run asks for 9
tubs of vanilla, 2,250 pence at 250 pence a tub: approval 1. Every amount is
worked out by hand and written out. The store is read only through the
grader's door, so the tests run as well against the grader's stand-in.
"""

import pytest
from approval_rules import approvals_file, ask_file, budget_file, decide_file, friday_file

NINE_VANILLA = [["SKU-VANILLA", 9]]


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "lucy.db")
    friday_file(path, ["lucy", "sam"], 5000)
    assert ask_file(path, "cafe", NINE_VANILLA)["awaiting"] == [1]
    return path


def test_over_the_cap_is_refused_and_changes_nothing(store):
    assert decide_file(store, "approve", 1, "sam", {"sam": 2000}) == "refused: over_cap"
    assert approvals_file(store)[0][1] == "PENDING"
    assert budget_file(store) == {"reserved": 0, "spent": 0, "left": 5000}


def test_exactly_the_cap_is_allowed(store):
    assert decide_file(store, "approve", 1, "sam", {"sam": 2250}) == "APPROVED"
    assert budget_file(store) == {"reserved": 2250, "spent": 0, "left": 2750}


def test_each_operator_has_their_own_cap(store):
    caps = {"sam": 1000, "lucy": 3000}
    assert decide_file(store, "approve", 1, "sam", caps) == "refused: over_cap"
    assert decide_file(store, "approve", 1, "lucy", caps) == "APPROVED"


def test_an_operator_without_a_cap_is_held_by_the_budget_alone(store):
    assert decide_file(store, "approve", 1, "lucy", {"sam": 100}) == "APPROVED"


def test_saying_no_is_never_capped(store):
    assert decide_file(store, "deny", 1, "sam", {"sam": 0}) == "DENIED"
