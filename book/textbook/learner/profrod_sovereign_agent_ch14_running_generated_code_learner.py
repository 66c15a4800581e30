"""Chapter 14 learner file: the Saturday program, the scripted model's steps, the hostile programs.

`run_python` itself is the book's package, `sovereign_agent.generated_code`;
these are the definitions the chapter prints. Importing this file prints
nothing, touches no file and starts no sandbox.
"""

import json
from collections.abc import Sequence
from pathlib import Path

from sovereign_agent.generated_code import CodeResult
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message

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
