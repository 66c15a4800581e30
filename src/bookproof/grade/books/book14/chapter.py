"""Exercise Book 14's baseline: what chapter 14's code, as the starter has it, already does.

The Saturday program is run by the grader over a file it invented; the
model's answer step is given a result the grader made up.
"""

from __future__ import annotations

import json
import random

from bookproof.grade.book import Trial
from bookproof.grade.books.book14.common import (
    BOOK,
    S_ANSWERS,
    SHOP_SKUS,
    invented_sales,
    run_program,
)
from bookproof.grade.questions import call, expect
from sovereign_agent.generated_code import Outcome


@BOOK.baseline(
    points=2,
    section=S_ANSWERS,
    asks="The chapter's Saturday program, run in the grader's sandbox over another sales file, "
    "names the flavour with most Saturday tubs, its Saturdays, and the most of them.",
    hint="Leave SATURDAY_PROGRAM as the chapter prints it: it reads /data/sales.csv and prints "
    "one line of JSON.",
)
def ch14_saturday_program(rng: random.Random) -> Trial:
    rows = invented_sales(rng)
    result = run_program((yield call("saturday_program")), rows)
    if isinstance(result, str):
        return result
    if result.outcome is not Outcome.PRINTED:
        return f"The Saturday program ended {result.outcome.value}: {result.error}"
    saturdays: dict[str, list[int]] = {}
    for _, weekday, sku, tubs in rows:
        if weekday == "Saturday":
            saturdays.setdefault(sku, []).append(tubs)
    best = min(saturdays, key=lambda sku: (-sum(saturdays[sku]), sku))
    wanted = {"sku": best, "saturdays": saturdays[best], "friday_night": max(saturdays[best])}
    try:
        printed = json.loads(result.output)
    except ValueError:
        return "The Saturday program should print one line of JSON."
    return expect(printed == wanted, "The Saturday program printed another answer for this file.")


@BOOK.baseline(
    points=1,
    section=S_ANSWERS,
    asks="The model's second step answers Lucy from a printed result, and says the analysis did "
    "not finish for any other outcome.",
    hint="Leave answer_from_the_result as the chapter prints it.",
)
def ch14_answer_from_the_result(rng: random.Random) -> Trial:
    sku = rng.choice(SHOP_SKUS)
    saturdays = [rng.randint(0, 30) for _ in range(rng.randint(2, 6))]
    found = {"sku": sku, "saturdays": saturdays, "friday_night": max(saturdays)}
    result = {"outcome": "printed", "output": json.dumps(found) + "\n", "error": ""}
    flavour = sku.removeprefix("SKU-").lower()
    wanted = (
        f"{flavour.capitalize()} sells most on Saturdays ({sum(saturdays)} tubs over "
        f"{len(saturdays)} Saturdays). Have {max(saturdays)} tubs of {flavour} on Friday night: "
        "the most sold on any of those Saturdays."
    )
    if (yield call("model_answer", result)) != wanted:
        return "The answer to a printed result should name the flavour, its tubs and Friday's."
    stopped = rng.choice(["time_limit", "memory_limit", "output_limit", "raised"])
    unfinished = {"outcome": stopped, "output": json.dumps(found), "error": "stopped"}
    return expect(
        (yield call("model_answer", unfinished)) == f"The analysis did not finish: {stopped}.",
        "A run that did not finish should be reported as such, not read as an answer.",
    )
