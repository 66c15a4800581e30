"""Chapter 14 checkpoint: the model's code answers Lucy's Saturday question; hostile programs fail.

The scripted model writes a program over the shop's sales file; `run_python`
runs it behind the boundary (bubblewrap's namespaces, read-only mounts, the
process's rlimits and seccomp filter, the parent's clock and output bound),
and the model answers from what it printed. Then the seven hostile programs
run, each printed with its named result.

Offline: the model is scripted and the sales file is committed, so the output
is the same on every machine that has bubblewrap. Where it is missing, the
checkpoint says so on standard error, with the command that installs it, and
prints nothing else; with REQUIRE_SYSTEM_COMPONENTS=1 (as CI sets it) that
skip is a failure (exit 1).
"""

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sovereign_agent.generated_code import (
    CodeLimits,
    build_code_tool,
    run_python,
    sandboxed_code_only,
)
from sovereign_agent.loop import run_task
from sovereign_agent.models import AssistantMessage, AssistantToolCall, Message
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.sandbox import bubblewrap_problem
from sovereign_agent.tools import Dispatcher

# The repository's sales file, wherever the checkpoint is started from.
DATA = Path(__file__).resolve().parents[1] / "data"
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


def main() -> int:
    problem = bubblewrap_problem(proc=False)
    if problem is not None:
        print(
            f"skipped: run_python needs a sandbox and none can be made here: {problem}; "
            "install bubblewrap with: sudo apt-get install bubblewrap",
            file=sys.stderr,
        )
        return 1 if os.environ.get("REQUIRE_SYSTEM_COMPONENTS") == "1" else 0

    print("question:", QUESTION)
    tools = Dispatcher(
        [build_code_tool(DATA)], allowed={"run_python"}, before_write=sandboxed_code_only
    )
    seen: list[dict[str, object]] = []

    def answer(messages: Sequence[Message]) -> AssistantMessage:
        # The program's result exactly as the model was told it, kept to print.
        seen.append(json.loads(str(messages[-1].content))["value"])
        return answer_from_the_result(messages)

    record = run_task(
        ScriptedModel([write_the_analysis, answer]),
        tools,
        QUESTION,
        max_steps=3,
        max_tool_calls=1,
    )
    result = seen[0]
    print(f"program: {result['outcome']} {str(result['output']).strip()}")
    print("answer:", record.answer)
    for name, program in HOSTILE.items():
        # One second for the loop, so the checkpoint does not wait the default five.
        seconds = 1.0 if name == "endless loop" else CodeLimits().seconds
        hostile = run_python(program, DATA, CodeLimits(seconds=seconds))
        print(f"{name}: {hostile.outcome.value}: {hostile.error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
