"""The child side of grading: import one submission, then answer questions about it, one at a time.

Runs as the first code of a fresh interpreter, inside the submission's
sandbox. Its configuration (module name, where the submission is, the two
pipe numbers, the limits) is its command-line argument. It sets its limits,
imports the submission, reports whether that worked, and then reads one
question, answers it, and reads the next, until the grader closes the pipe.

It decides nothing. It holds no expected value, no secret and no list of
the questions to come, so a submission that reads this module's source, its
frames or its memory finds only the question it is already being asked.
Whatever the process writes to the answer pipe is simply taken as its
answer; the grader judges it like any other value.

Every reference the answering path needs (the encoder, `os.read`,
`os.write`, `os._exit`, the builtins it calls) is captured before the
submission is imported, so a submission that patches `builtins`, `json` or
`sys.exit` for its own ends does not garble the answers of honest code.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os
import sys
from typing import Any

from .encoding import make_encoder
from .limits import start_up

__all__ = ["EXCEPTION_NAMES", "main"]

# The only exception names that may travel back: builtin classes, matched by
# identity, so a submission's own class called "secret-token-..." reports as
# nothing more than the builtin classes it inherits from.
EXCEPTION_NAMES = (
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "LookupError",
    "AttributeError",
    "PermissionError",
    "TimeoutError",
    "OSError",
    "MemoryError",
    "RecursionError",
    "NotImplementedError",
    "ImportError",
    "SyntaxError",
    "SystemExit",
    "KeyboardInterrupt",
    "Exception",
)


def main() -> None:
    """Answer the questions on the question pipe; one JSON line per answer on the answer pipe."""
    # --- capture everything the answering path uses, before any submission runs
    encode = make_encoder()
    read = os.read
    write = os.write
    exit_now = os._exit
    issubclass_ = builtins.issubclass
    type_ = builtins.type
    callable_ = builtins.callable
    getattr_ = builtins.getattr
    setattr_ = builtins.setattr
    isinstance_ = builtins.isinstance
    len_ = builtins.len
    tuple_ = builtins.tuple
    list_ = builtins.list
    dict_ = builtins.dict
    base_exception = BaseException
    exception_classes = tuple_((name, getattr(builtins, name)) for name in EXCEPTION_NAMES)
    loads = json.loads
    make_folder = os.mkdir
    # The process's own scratch space (the sandbox's /tmp, or the folder the
    # grader made for it in process mode); each check's files go in a folder
    # of their own inside it.
    scratch = os.environ.get("TMPDIR", "/tmp")

    config = loads(sys.argv[1])
    questions: int = config["questions"]
    answers: int = config["answers"]
    start_up(config["limits"], require_filter=config["require_filter"])
    # The submission gets an empty stdin: questions come only on their own pipe.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)

    pending = bytearray()

    def next_question() -> dict[str, Any] | None:
        while True:
            end = pending.find(b"\n")
            if end >= 0:
                line = bytes(pending[:end])
                del pending[: end + 1]
                return loads(line.decode("utf-8"))  # type: ignore[no-any-return]
            chunk = read(questions, 65536)
            if not chunk:
                return None
            pending.extend(chunk)

    def send(text: str) -> None:
        data = (text + "\n").encode("ascii")
        while data:
            written = write(answers, data)
            data = data[written:]

    def answer(frame: dict[str, Any]) -> None:
        text = encode(frame)
        # Frames built here are always plain; fail closed if one is not.
        send('{"status":"wrong_type"}' if text is None else text)

    def answer_value(value: Any) -> None:
        text = encode(value)
        if text is None:
            send('{"status":"wrong_type"}')
        else:
            # Encoded once, strictly; spliced in rather than parsed back with a
            # json module the submission may have patched.
            send('{"status":"returned","value":' + text + "}")

    def raised(exc: BaseException) -> dict[str, Any]:
        kind = type_(exc)
        names = [name for name, cls in exception_classes if issubclass_(kind, cls)]
        return {"status": "raised", "raised": names}

    sys.path.insert(0, config["submission"])
    try:
        module = importlib.import_module(config["module"])
    except base_exception as exc:
        answer({"status": "import_failed", "raised": raised(exc)["raised"]})
        exit_now(0)
    answer({"status": "imported"})

    tool_classes: dict[str, Any] = {}

    def tool_layer(name: str) -> Any:
        # The submission's own class first (it may define the tool layer
        # itself, as the learner file does); otherwise the book's runtime.
        if name not in tool_classes:
            own = getattr_(module, name, None)
            if isinstance_(own, type_):
                tool_classes[name] = own
            else:
                from sovereign_agent import tools

                tool_classes[name] = getattr_(tools, name)
        return tool_classes[name]

    probe_model: list[Any] = []

    def probe_arguments() -> Any:
        if not probe_model:
            from pydantic import BaseModel, ConfigDict

            class ProbeArguments(BaseModel):
                model_config = ConfigDict(extra="forbid", strict=True)

            probe_model.append(ProbeArguments)
        return probe_model[0]

    # What one check built: its kept objects, its probes' run counts, and the
    # module functions it replaced (put back when the next check begins).
    kept: dict[str, Any] = {}
    runs: dict[str, int] = {}
    replaced: dict[str, Any] = {}
    # The check's folder of files (made on first use) and how many checks began.
    files: dict[str, str] = {}
    begun = [0]

    def scratch_file(name: str) -> str:
        if "folder" not in files:
            folder = f"{scratch}/check-{begun[0]}"
            make_folder(folder)
            files["folder"] = folder
        return f"{files['folder']}/{name}"

    def make_probe(name: str, value: str) -> Any:
        runs.setdefault(name, 0)

        def handler(_: Any) -> str:
            runs[name] += 1
            return value

        return tool_layer("ExecutableTool")(
            name=name,
            description="A probe registered by the grader.",
            arguments=probe_arguments(),
            handler=handler,
        )

    def live(value: Any) -> Any:
        # A fresh object for every use, so nothing the submission keeps or
        # changes can alter the grader's next argument.
        if isinstance_(value, list_):
            return [live(item) for item in value]
        if isinstance_(value, dict_):
            if len_(value) == 1:
                ((key, inner),) = value.items()
                if key == "$ref":
                    return kept[inner]
                if key == "$tuple":
                    return tuple_(live(item) for item in inner)
                if key == "$probe":
                    return make_probe(inner["name"], inner["value"])
                if key == "$file":
                    return scratch_file(inner)
                if key == "$call":
                    return tool_layer("ToolCall")(
                        id=inner["id"], name=inner["name"], arguments=live(inner["arguments"])
                    )
            return {key: live(item) for key, item in value.items()}
        return value

    def lookup(answers_by_key: dict[str, Any], key: str) -> Any:
        def replaced_function(row: Any, *_: Any, **__: Any) -> Any:
            return answers_by_key[row[key]]

        return replaced_function

    def begin() -> None:
        for name, original in replaced.items():
            setattr_(module, name, original)
        replaced.clear()
        kept.clear()
        runs.clear()
        files.clear()
        begun[0] += 1

    while True:
        question = next_question()
        if question is None:
            exit_now(0)
        op = question["op"]
        if op == "begin":
            begin()
            continue
        try:
            if op == "call":
                target = getattr_(module, question["fn"])
                outcome = target(*live(question["args"]), **live(question["kwargs"]))
            elif op == "method":
                target = getattr_(kept[question["obj"]], question["name"])
                outcome = target(*live(question["args"]), **live(question["kwargs"]))
            elif op == "let":
                outcome = live(question["value"])
            elif op == "get":
                outcome = kept[question["obj"]]
            elif op == "set":
                container = kept[question["obj"]]
                *path, last = question["path"]
                for key in path:
                    container = container[key]
                container[last] = live(question["value"])
                outcome = None
            elif op == "probe_count":
                outcome = runs.get(question["name"], 0)
            elif op == "attrs":
                outcome = {
                    name: callable_(getattr_(module, name, None)) for name in question["names"]
                }
            elif op == "stub":
                name = question["fn"]
                if name not in replaced:
                    replaced[name] = getattr_(module, name)
                setattr_(module, name, lookup(question["answers"], question["key"]))
                outcome = None
            else:
                raise NotImplementedError(op)
            keep = question.get("keep")
            if keep is not None:
                kept[keep] = outcome
                answer({"status": "kept"})
            else:
                answer_value(outcome)
        except base_exception as exc:
            # SystemExit and KeyboardInterrupt included: a submission that
            # calls sys.exit() mid-check loses that check, not the batch.
            answer(raised(exc))
