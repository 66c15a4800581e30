"""Exercise Book 10, Unit B's last part: holding tubs, declared by what it can do (exercise 3).

`hold_tubs` reserves tubs from a run. The starter declares it the chapter 2
way, consequential, so under approvals it meets the approval authority,
which has no price for it and refuses it. Declared a `write`, it runs without
an approval and a run that has read untrusted text loses it. What each
sku's reserved count starts at on Friday is written out here.
"""

from __future__ import annotations

import random

from bookproof.grade.book import Trial
from bookproof.grade.books.book10.common import BOOK, PRICES, S_UNIT_C, friday, operator_names
from bookproof.grade.questions import call, expect, same

# Chapter 6's Friday promises, written out: 3 vanilla and 2 chocolate are reserved.
FRIDAY_RESERVED = {"SKU-CHOCOLATE": 2, "SKU-STRAWBERRY": 0, "SKU-VANILLA": 3}


@BOOK.exercise(
    3,
    points=2,
    section=S_UNIT_C,
    asks="A run under approvals that holds tubs holds them at once: no approval is asked for, "
    "and the sku's reserved count rises by exactly the tubs held.",
    hint="Holding tubs was refused, waited for an approval, or did not reserve the tubs, though "
    "a hold spends nothing and so never needs an approval.",
)
def ex3_hold_runs_without_approval(rng: random.Random) -> Trial:
    path = yield from friday(operator_names(rng, 2), rng.randint(5_000, 9_000))
    sku = rng.choice(sorted(PRICES))
    tubs = rng.randint(1, 9)
    wanted = {"stop": "final_answer", "reserved": FRIDAY_RESERVED[sku] + tubs, "approvals": 0}
    return expect(
        same(wanted, (yield call("hold_file", path, f"hold-{rng.randint(100, 999)}", sku, tubs))),
        "A run holding tubs should hold them, ask for no approval, and finish.",
    )


@BOOK.exercise(
    3,
    points=1,
    section=S_UNIT_C,
    asks="hold_tubs declares that it writes and nothing more, so a run that has read untrusted "
    "text keeps only the tools that read.",
    hint="A hold changes the shop's own records and does nothing else to the world; the tool's "
    "effect classes say something different.",
    requires=ex3_hold_runs_without_approval,
)
def ex3_hold_is_a_write(rng: random.Random) -> Trial:
    path = yield from friday(operator_names(rng, 2), rng.randint(5_000, 9_000))
    found = yield call("classes_file", path)
    if not isinstance(found, dict) or not same(
        ["write"], found.get("classes", {}).get("hold_tubs")
    ):
        return "hold_tubs says it can do more, or other, than change the shop's own records."
    return expect(
        same(["list_stock", "supplier"], found.get("kept")),
        "After a read of untrusted text, only the tools that read should be kept.",
    )
