"""The child side of grading: import one submission, run the steps, report raw observations.

Runs as `python -I -c "...harness.main()"` in a fresh process, in a temporary
copy of the submission folder, with a scrubbed environment. It never decides
a score. It reads its orders (module name, trials, limits, a per-run nonce and
the number of the result pipe) from stdin before anything of the
submission's runs, then closes stdin, limits its own memory, file sizes and
CPU time, and only then imports the submission.

Every reference the reporting path needs (the encoder, `os.write`,
`os._exit`, the nonce, the pipe) is captured into `main`'s local variables
first, so a submission that patches `builtins`, `json`, `sys.exit` or this
module's globals cannot change what gets written. Results go to the
dedicated pipe, never to stdout: printing a fake report does nothing. The
grader re-validates every frame, and judges values against answers it
computed itself for data it randomised, so a forged frame gains nothing.
"""

from __future__ import annotations

import builtins
import importlib
import json
import os
import resource
import sys
from typing import Any

from bookproof.grade.encoding import make_encoder

__all__ = ["EXCEPTION_NAMES", "main"]

# The only exception names that may travel back: builtin classes, matched by
# identity, so a submission's own class called "secret-token-..." reports as
# nothing more than the builtin classes it inherits from.
EXCEPTION_NAMES = (
    "ValueError",
    "TypeError",
    "KeyError",
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


def _limit(kind: int, value: int) -> None:
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def main() -> None:
    """Run the orders on stdin; write one JSON line per event to the result pipe."""
    # --- capture everything the reporting path uses, before any submission runs
    encode = make_encoder()
    write = os.write
    exit_now = os._exit
    issubclass_ = builtins.issubclass
    type_ = builtins.type
    callable_ = builtins.callable
    getattr_ = builtins.getattr
    isinstance_ = builtins.isinstance
    len_ = builtins.len
    tuple_ = builtins.tuple
    enumerate_ = builtins.enumerate
    base_exception = BaseException
    exception_classes = tuple((name, getattr(builtins, name)) for name in EXCEPTION_NAMES)
    loads = json.loads

    orders = loads(sys.stdin.buffer.read().decode("utf-8"))
    # The orders are read; the submission gets an empty stdin, not a second look.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)

    channel: int = orders["fd"]
    nonce: str = orders["nonce"]
    limits: dict[str, int] = orders["limits"]

    def emit(frame: dict[str, Any], value_text: str | None = None) -> None:
        frame["n"] = nonce
        text = encode(frame)
        if text is None:  # cannot happen for frames built below; fail closed if it does
            text = encode({"n": nonce, "k": "harness_error"})
        elif value_text is not None:
            # The value was encoded once, strictly; splice its text in rather
            # than parse it back with a json module the submission may patch.
            text = text[:-1] + ',"r":{"status":"returned","value":' + value_text + "}}"
        data = (text + "\n").encode("ascii")
        while data:
            written = write(channel, data)
            data = data[written:]

    def raised(exc: BaseException) -> dict[str, Any]:
        kind = type_(exc)
        names = [name for name, cls in exception_classes if issubclass_(kind, cls)]
        return {"status": "raised", "raised": names}

    # --- limits: set here, in the child, before the submission's first line
    _limit(resource.RLIMIT_AS, limits["memory_bytes"])
    _limit(resource.RLIMIT_FSIZE, limits["file_bytes"])
    _limit(resource.RLIMIT_CPU, limits["cpu_seconds"])
    _limit(resource.RLIMIT_CORE, 0)

    workdir = os.getcwd()
    sys.path.insert(0, workdir)
    emit({"k": "start"})
    try:
        module = importlib.import_module(orders["module"])
    except base_exception as exc:
        emit({"k": "import_failed", "r": raised(exc)})
        exit_now(0)
    emit({"k": "imported"})

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

    for t_index, trial in enumerate_(orders["trials"]):
        saved: dict[str, Any] = {}
        runs: dict[str, int] = {}

        def live(value: Any, saved: dict[str, Any] = saved, runs: dict[str, int] = runs) -> Any:
            # A fresh object for every use, so nothing the submission keeps
            # or changes can alter the grader's next argument.
            if isinstance_(value, list):
                return [live(item) for item in value]
            if isinstance_(value, dict):
                if len_(value) == 1:
                    ((key, inner),) = value.items()
                    if key == "$ref":
                        return saved[inner]
                    if key == "$tuple":
                        return tuple_(live(item) for item in inner)
                    if key == "$probe":
                        return make_probe(inner["name"], inner["value"], runs)
                    if key == "$call":
                        return tool_layer("ToolCall")(
                            id=inner["id"], name=inner["name"], arguments=live(inner["arguments"])
                        )
                return {key: live(item) for key, item in value.items()}
            return value

        def make_probe(name: str, value: str, runs: dict[str, int]) -> Any:
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

        for s_index, step in enumerate_(trial["steps"]):
            op = step["op"]
            try:
                if op == "call":
                    target = getattr_(module, step["fn"])
                    outcome = target(*live(step["args"]), **live(step["kwargs"]))
                elif op == "method":
                    target = getattr_(saved[step["obj"]], step["name"])
                    outcome = target(*live(step["args"]))
                elif op == "let":
                    outcome = live(step["value"])
                elif op == "get":
                    outcome = saved[step["obj"]]
                elif op == "set":
                    container = saved[step["obj"]]
                    *path, last = step["path"]
                    for key in path:
                        container = container[key]
                    container[last] = live(step["value"])
                    outcome = None
                elif op == "probe_count":
                    outcome = runs.get(step["name"], 0)
                elif op == "attrs":
                    outcome = {
                        name: callable_(getattr_(module, name, None)) for name in step["names"]
                    }
                else:
                    raise NotImplementedError(op)
                value_text: str | None = None
                save = step.get("save")
                if save is not None:
                    saved[save] = outcome
                    result: dict[str, Any] | None = {"status": "saved"}
                else:
                    value_text = encode(outcome)
                    result = {"status": "wrong_type"} if value_text is None else None
            except base_exception as exc:
                # SystemExit and KeyboardInterrupt included: a submission that
                # calls sys.exit() mid-check loses that check, not the batch.
                result, value_text = raised(exc), None
            frame: dict[str, Any] = {"k": "step", "t": t_index, "s": s_index}
            if result is None:
                emit(frame, value_text)
            else:
                frame["r"] = result
                emit(frame)
    emit({"k": "done"})
    exit_now(0)
