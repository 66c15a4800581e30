"""Unit B's tests: a finished run gives back the money it no longer needs (Exercise 2).

Each test gets its own store in pytest's tmp_path: Friday, two operators and
a weekly limit of 5,000 pence. The morning run asks for 9 vanilla (2,250
pence, approval 1), 1 chocolate (300, approval 2) and 4 strawberry (1,100,
approval 3); Lucy approves 1 and 2, and a later run uses 1. The cafe's run
asks for 2 vanilla (500, approval 4), which Sam approves. Every amount is
worked out by hand and written out.
"""

import pytest
from approval_rules import (
    approvals_file,
    ask_file,
    budget_file,
    decide_file,
    friday_file,
    release_file,
)

MORNING = [["SKU-VANILLA", 9], ["SKU-CHOCOLATE", 1], ["SKU-STRAWBERRY", 4]]


@pytest.fixture
def store(tmp_path):
    path = str(tmp_path / "lucy.db")
    friday_file(path, ["lucy", "sam"], 5000)
    assert ask_file(path, "morning", MORNING)["awaiting"] == [1, 2, 3]
    assert decide_file(path, "approve", 1, "lucy", {}) == "APPROVED"
    assert decide_file(path, "approve", 2, "lucy", {}) == "APPROVED"
    assert ask_file(path, "morning-again", MORNING[:1])["stop"] == "final_answer"
    assert ask_file(path, "cafe", [["SKU-VANILLA", 2]])["awaiting"] == [4]
    assert decide_file(path, "approve", 4, "sam", {}) == "APPROVED"
    assert budget_file(path) == {"reserved": 800, "spent": 2250, "left": 1950}
    return path


def statuses(path):
    return [row[1] for row in approvals_file(path)]


def test_release_revokes_the_runs_unused_approvals_and_frees_their_money(store):
    assert release_file(store, "morning", "sam") == [2]
    assert statuses(store) == ["USED", "REVOKED", "PENDING", "APPROVED"]
    assert budget_file(store) == {"reserved": 500, "spent": 2250, "left": 2250}


def test_a_released_call_must_be_approved_again(store):
    release_file(store, "morning", "sam")
    assert ask_file(store, "later", MORNING[1:2]) == {
        "stop": "awaiting_approval",
        "awaiting": [5],
        "denied": [],
    }


def test_other_runs_keep_their_approvals(store):
    assert release_file(store, "cafe", "lucy") == [4]
    assert statuses(store) == ["USED", "APPROVED", "PENDING", "REVOKED"]
    assert budget_file(store) == {"reserved": 300, "spent": 2250, "left": 2450}


def test_a_run_with_nothing_approved_releases_nothing(store):
    assert release_file(store, "morning-again", "lucy") == []
    assert statuses(store) == ["USED", "APPROVED", "PENDING", "APPROVED"]
    assert budget_file(store) == {"reserved": 800, "spent": 2250, "left": 1950}


def test_only_an_operator_may_release(store):
    # The ledger's refusal is a PermissionError; nothing is revoked.
    with pytest.raises(PermissionError):
        release_file(store, "morning", "mallory")
    assert statuses(store) == ["USED", "APPROVED", "PENDING", "APPROVED"]
