"""Solutions 14: `code_answers.py`, all three exercises done.

Chapter 14's learner file unchanged, then the three exercises, then the
grader's door (as in the starter).
"""

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sovereign_agent.generated_code import CodeResult
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message, ToolMessage

DATA = Path("book/textbook/data")
QUESTION = "Which flavour sells most on Saturdays, and how many tubs should Lucy have on Friday?"

SATURDAY_PROGRAM = """
import csv, json
from collections import defaultdict

saturdays = defaultdict(list)
with open("/data/sales.csv") as sales:
    for row in csv.DictReader(sales):
        if row["weekday"] == "Saturday":
            saturdays[row["sku"]].append(int(row["tubs"]))
best = max(sorted(saturdays), key=lambda sku: sum(saturdays[sku]))
print(json.dumps({"sku": best, "saturdays": saturdays[best], "friday_night": max(saturdays[best])}))
"""

HOSTILE = {
    "read a file outside": "print(open('/etc/passwd').read())",
    "open a socket": "import socket\nsocket.create_connection(('192.0.2.1', 80))",
    "start a process": "import subprocess\nsubprocess.run(['ls', '/'])",
    "endless loop": "while True:\n    pass",
    "memory bomb": "tubs = []\nwhile True:\n    tubs.append(' ' * 10 ** 6)",
    "flood of output": "while True:\n    print('vanilla' * 100)",
    "write outside scratch": "open('/data/sales.csv', 'w').write('')",
}


def looks_harmless(program: str) -> bool:
    """A check on a program's text: the kind of guard that cannot work."""
    forbidden = ("import os", "subprocess", "socket", "open(")
    return not any(word in program for word in forbidden)


def show(result: CodeResult) -> None:
    """One run in one line: its named outcome, then what it printed or why it stopped."""
    said = result.error or result.output.strip()
    print(f"{result.outcome.value}: {said}")


def write_the_analysis(messages: Sequence[Message]) -> AssistantMessage:
    """The scripted model's first step: a program that answers Lucy's Saturday question."""
    arguments = json.dumps({"code": SATURDAY_PROGRAM})
    call = AssistantToolCall(id="code-1", name="run_python", arguments_json=arguments)
    return AssistantMessage(tool_calls=(call,))


def answer_from_the_result(messages: Sequence[Message]) -> AssistantMessage:
    """The scripted model's second step: Lucy's answer, from what the program printed."""
    result = json.loads(str(messages[-1].content))["value"]
    if result["outcome"] != "printed":
        return AssistantMessage(content=f"The analysis did not finish: {result['outcome']}.")
    found = json.loads(result["output"])
    flavour = found["sku"].removeprefix("SKU-").lower()
    return AssistantMessage(
        content=f"{flavour.capitalize()} sells most on Saturdays "
        f"({sum(found['saturdays'])} tubs over {len(found['saturdays'])} Saturdays). "
        f"Have {found['friday_night']} tubs of {flavour} on Friday night: "
        "the most sold on any of those Saturdays."
    )


# --- Exercise 1 (Unit A) -------------------------------------------------------------

WEEKDAY_PROGRAM = """
import csv, json

weekday = {weekday!r}
totals, best_day = {{}}, {{}}
with open("/data/sales.csv") as sales:
    for row in csv.DictReader(sales):
        if row["weekday"] == weekday:
            sku, tubs = row["sku"], int(row["tubs"])
            totals[sku] = totals.get(sku, 0) + tubs
            best_day[sku] = max(best_day.get(sku, 0), tubs)
best = min(totals, key=lambda sku: (-totals[sku], sku))
print(json.dumps({{"sku": best, "tubs": best_day[best]}}))
"""


def weekday_program(weekday: str) -> str:
    """The text of a program that answers "which flavour sells most on `weekday`?".

    The weekday goes into the program as a Python literal (`repr`), never
    pasted in as code: a weekday with a quote in it stays a string.
    """
    return WEEKDAY_PROGRAM.format(weekday=weekday)


# --- Exercise 2 (Unit B) -------------------------------------------------------------

SHOP_SKUS = ("SKU-CHOCOLATE", "SKU-STRAWBERRY", "SKU-VANILLA")


class WeekdayAnswer(BaseModel):
    """The one shape `read_answer` accepts: strict, nothing extra."""

    model_config = ConfigDict(extra="forbid", strict=True)

    sku: str
    tubs: int = Field(ge=0, le=1000)


def read_answer(observation: dict[str, str]) -> dict[str, object]:
    """Read a `run_python` result as untrusted text; an answer only if it is exactly one."""
    # 1. A run that did not finish is no answer, whatever it printed before it stopped.
    if observation.get("outcome") != "printed":
        return {"ok": False, "reason": str(observation.get("outcome"))}
    output = str(observation.get("output", ""))
    line = output[:-1] if output.endswith("\n") else output
    # 2. Exactly one line, exactly the shape asked for; the refusal repeats none of it.
    if "\n" in line:
        return {"ok": False, "reason": "unreadable_output"}
    try:
        answer = WeekdayAnswer.model_validate_json(line)
    except ValidationError:
        return {"ok": False, "reason": "unreadable_output"}
    if answer.sku not in SHOP_SKUS:
        return {"ok": False, "reason": "unreadable_output"}
    return {"ok": True, "sku": answer.sku, "tubs": answer.tubs}


# --- Exercise 3 (Unit C, open design): what to do after a run ------------------------

# Chapter 14's time limit (CodeLimits().seconds), in whole seconds.
FIRST_SECONDS = 5


def next_step(attempts: list[dict[str, int | str]], budget: dict[str, int]) -> dict[str, int | str]:
    """After the attempts so far at one question, Lucy's next step: run again, or stop.

    `attempts` are the question's runs so far, in order, each
    {"seconds": its time limit, "outcome": how it ended}: "answered" or
    "unreadable_output" for a printed run (Unit B's reading), otherwise
    run_python's outcome. `budget` is Lucy's, {"attempts": at most this many
    runs, "seconds": at most this many seconds given to all runs together}.
    Answer {"run": whole seconds} for the next run's time limit, or
    {"stop": reason}: the last attempt's outcome, or "no_budget" when the
    budget cannot pay for a first run.

    The design: only a timeout is worth another run, since the same program
    over the same file ends every other way again, and the memory, file and
    output limits are not Lucy's to raise. A timeout is tried again with
    twice the time, or all the budget has left if that is less, but only if
    that is more than the last run had: the same time again would end the
    same way.
    """
    attempts_left = budget["attempts"] - len(attempts)
    seconds_left = budget["seconds"] - sum(int(run["seconds"]) for run in attempts)
    if not attempts:
        # The chapter's time limit for a first run, or all the budget if it is less.
        if attempts_left < 1 or seconds_left < 1:
            return {"stop": "no_budget"}
        return {"run": min(FIRST_SECONDS, seconds_left)}
    last = attempts[-1]
    outcome, seconds = str(last["outcome"]), int(last["seconds"])
    if outcome != "time_limit":
        return {"stop": outcome}
    more = min(2 * seconds, seconds_left)
    if attempts_left < 1 or more <= seconds:
        return {"stop": "time_limit"}
    return {"run": more}


# --- The grader's door: plain JSON in, plain JSON out. Leave it as it is. ------------


def saturday_program() -> str:
    """The program the chapter's scripted model writes, for the grader to run."""
    return SATURDAY_PROGRAM


def model_answer(result: dict[str, str]) -> str | None:
    """The chapter's second model step, answering from `result` as run_python would give it."""
    told = ToolMessage(tool_call_id="code-1", content=json.dumps({"ok": True, "value": result}))
    return answer_from_the_result([told]).content
