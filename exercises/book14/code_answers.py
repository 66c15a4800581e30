"""Exercise Book 14 (running generated code): the starter, `code_answers.py`.

This is chapter 14's learner file, unchanged, then the three exercises,
then the grader's door. It runs, and does none of the exercises yet: look
for the parts marked `Exercise 1`, `Exercise 2` and `Exercise 3` (Unit C,
an open design task).

Nothing in this file runs a program. `weekday_program` only writes one, as
text; the grader runs it with `run_python`, in a sandbox of its own, over a
sales file it makes up for each check. (Your own code runs in the grader's
sandbox, which allows no new process: a sandbox could not start from it.)
"""

import json
from collections.abc import Sequence
from pathlib import Path

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


def weekday_program(weekday: str) -> str:
    """The text of a program that answers "which flavour sells most on `weekday`?".

    Run by `run_python` with a sales file at /data/sales.csv (columns date,
    weekday, sku, tubs), it prints exactly one line of JSON,
    {"sku": best, "tubs": most}: the sku with the most tubs sold on that
    weekday over the whole file (a tie goes to the first sku by name), and
    the most tubs it sold on one such day.
    """
    # Not written yet: a program that says so when it runs.
    return "raise NotImplementedError('Exercise 1: write weekday_program')"


# --- Exercise 2 (Unit B) -------------------------------------------------------------


def read_answer(observation: dict[str, str]) -> dict[str, object]:
    """Read a `run_python` result as untrusted text; an answer only if it is exactly one.

    {"ok": True, "sku": ..., "tubs": ...} when the outcome is "printed" and the
    output is exactly one line (a final newline allowed) of JSON with exactly
    the keys "sku" (one of the shop's three skus) and "tubs" (an int from 0
    to 1000). Otherwise {"ok": False, "reason": the outcome} for a run that
    did not finish, or {"ok": False, "reason": "unreadable_output"}: a fixed
    code, never anything the program printed.
    """
    # Not written yet: every result refused.
    return {"ok": False, "reason": "not_written"}


# --- Exercise 3 (Unit C, open design): what to do after a run ------------------------


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
    """
    raise NotImplementedError("Exercise 3: write next_step")


# --- The grader's door: plain JSON in, plain JSON out. Leave it as it is. ------------


def saturday_program() -> str:
    """The program the chapter's scripted model writes, for the grader to run."""
    return SATURDAY_PROGRAM


def model_answer(result: dict[str, str]) -> str | None:
    """The chapter's second model step, answering from `result` as run_python would give it."""
    told = ToolMessage(tool_call_id="code-1", content=json.dumps({"ok": True, "value": result}))
    return answer_from_the_result([told]).content
