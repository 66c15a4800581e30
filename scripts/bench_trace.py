"""What recording a trace costs: chapter 3's morning plan with SOVEREIGN_TRACE set, against unset.

Both sides run the plan exactly as chapter 3's checkpoint does (the shop's
own dispatcher, no recorder passed), so the traced side pays for everything
the variable brings: reading the environment for the trace file and for keys,
building every event, encoding it, and writing the file. Every figure is CPU
time of this process (the stub server's thread included, while it runs),
measured in the same run, interleaved round by round. Four goals
(issue 31; they replace issue 13's 10% of an offline run, which no recorder
could meet: encoding the events and writing them once already cost more):

1. Over HTTP: the plan against a local stub provider (the OpenAI-compatible
   client, a real HTTP server on 127.0.0.1 in this process), traced at most
   1.10x untraced. This is the run a reader makes.
2. Against OpenTelemetry: the same events recorded as spans by the official
   SDK (in-memory exporter) in the same process, ours at most 0.25x of it.
   Needs `opentelemetry-sdk`, which this project does not install; without it
   the goal is printed as not measured and counts as missed.
3. Offline, against its floor: what recording adds to the scripted plan
   (traced minus untraced) at most 1.5x the floor, which is encoding the
   run's events (`encode_event`; the events SOVEREIGN_TRACE writes, each
   call's effect classes included, which the script checks against the
   trace it wrote) and appending them in one write. No
   recorder can cost less than the floor. The floor is measured where a
   recorder has to do that work: inside the run, each event (built before
   the timing) encoded when the loop tells of it, the lines written once when
   it finishes (`FloorRecorder`), minus the untraced plan. Measured on its
   own, in a loop that does nothing else, the same encoding and write cost
   about half as much (printed as "floor, alone"): the encoder's code and
   the events stay in the processor's caches from one event to the next,
   which no recorder inside a run can have, so a goal against that figure
   asked the recorder to beat the floor's own work done in its place.
4. A key in the environment (as a reader who configured a real model has
   one, here 56 characters shaped like a provider's): every line is searched
   for pieces of it; the keyed traced plan at most 1.10x the keyless traced
   plan, offline.

A further line shows where the cost goes: the same plan with every event
built and handed to a sink that keeps nothing (no JSON, no write). Exit status
0 when every goal is met, 1 when one is missed or not measured.

The goals are judged on medians over the rounds of figures each taken within
one round: what recording added (traced minus untraced) and what the floor
added (floor minus untraced), whose medians give the floor's ratio, and the
ratio of two sides (keyed to keyless, over HTTP). Two sides timed back to
back share whatever the machine was doing then, which a difference of two
best times, each from its own round, does not: on a busy machine the floor's
ratio taken that way moved from 0.6x to 1.7x between runs. Quartiles are
printed beside the medians; the best times are printed as before.

Each goal's sides are timed in a phase of their own (`PHASES`), interleaved
with each other and nothing else; the stub server runs only for the HTTP
phase; and the trace file and the floor's file are emptied before every
round. Until issue 31 every side was timed in one rotation of nine, ten runs
to a timing, files growing by megabytes, with the stub's thread polling 50
times a second throughout. The same code then gave the floor's ratio as
1.6x, 2.0x, 2.4x and 2.7x in four runs over two days, and 1.34x and 1.43x with fifty runs
to a timing: the floor moved from 23 to 72 us/run while recording stayed
near 72. Most of that was the write, which both sides make with the same
bytes: appending to a file that had grown, at times when the kernel was
busy with its page cache, cost ten times its usual 3 to 4 us, and a write
that dear makes every recorder look closer to the floor. Taken as now, the
three offline sides alone gave 1.82x to 1.95x in every run, with timings of
10, 50 or 200 runs, the collector on or off, and quartiles within a few
microseconds.

With `--instructions` (valgrind must be installed), the offline sides are
also counted in instructions (callgrind, only while the plan runs, after
warming up): a figure no other process can disturb, though it leaves out what
a cache miss costs. Each side takes a minute or more under valgrind.

    uv run python scripts/bench_trace.py [--runs N] [--repeat R] [--instructions]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import random
import runpy
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sovereign_agent.loop import RunRecord, StopReason, run_task
from sovereign_agent.models import AssistantMessage, ModelClient
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.models.openai_compat import OpenAICompatibleClient
from sovereign_agent.shop import build_tools
from sovereign_agent.trace import TRACE_VARIABLE, Recorder, read_trace
from sovereign_agent.trace.recorder import encode_event

ROOT = Path(__file__).resolve().parents[1]
# The tests' stub provider: a real HTTP server on 127.0.0.1, no network beyond it.
sys.path.insert(0, str(ROOT / "tests"))
from provider_stub import (  # noqa: E402
    OPENAI_ROUTE,
    ProviderStub,
    StubResponse,
    openai_text,
    openai_tool_calls,
)

CHECKPOINTS = ROOT / "book/textbook/checkpoints"
CHAPTER_1 = CHECKPOINTS / "profrod_sovereign_agent_ch01_first_model_call_checkpoint.py"
CHAPTER_3 = CHECKPOINTS / "profrod_sovereign_agent_ch03_bounded_agent_loop_checkpoint.py"
HTTP_GOAL = 1.10
OTEL_GOAL = 0.25
FLOOR_GOAL = 1.5
KEY_GOAL = 1.10
# A variable whose name marks it as a key (see secrets_from_env), for the keyed figure.
BENCH_KEY = "SOVEREIGN_BENCH_API_KEY"
# Shaped like a provider's key: a prefix and 48 letters and digits from no
# pattern. A key that repeats itself ("k3yk3y...") has a handful of distinct
# pieces to look for and makes the search look several times cheaper than a
# real key's; this one has as many as a real key of its length.
BENCH_KEY_VALUE = "sk-proj-" + "".join(
    random.Random(31).choices(string.ascii_letters + string.digits, k=48)
)


class FloorRecorder(Recorder):
    """The floor's work done where a recorder does it: the run's events, built already, encoded
    one by one as the loop tells of them, and written in one write when the run finishes.

    Nothing else: no clock read, no id, no fingerprint, no event built. Each
    run must tell it the events `events` holds, in their order.
    """

    def __init__(self, events: Sequence[Mapping[str, Any]], descriptor: int) -> None:
        super().__init__(None)
        self._events = events
        self._descriptor = descriptor
        self._encoded: list[bytes] = []

    def _encode_next(self) -> None:
        self._encoded.append(encode_event(self._events[len(self._encoded)]))

    def run_started(self, *args: Any, **kwargs: Any) -> None:
        self._encoded = []
        self._encode_next()

    def model_request(self, *args: Any, **kwargs: Any) -> None:
        self._encode_next()

    def model_reply(self, *args: Any, **kwargs: Any) -> None:
        self._encode_next()

    def tool_call(self, *args: Any, **kwargs: Any) -> None:
        self._encode_next()

    def tool_answered(self, *args: Any, **kwargs: Any) -> None:
        pass

    def tool_outcome(self, *args: Any, **kwargs: Any) -> None:
        self._encode_next()

    def scope_narrowed(self, *args: Any, **kwargs: Any) -> None:
        self._encode_next()

    def run_finished(self, *args: Any, **kwargs: Any) -> None:
        self._encode_next()
        view = memoryview(b"".join(self._encoded))
        while view:
            view = view[os.write(self._descriptor, view) :]


def interleaved_per_run_seconds(
    works: dict[str, tuple[Callable[[], object], Callable[[], object]]],
    runs: int,
    rounds: int,
    *,
    between_rounds: Callable[[], object] = lambda: None,
) -> dict[str, list[float]]:
    """Per-run CPU seconds of each work, timed back to back in every round: one figure a round.

    Each work is (setup, run): the setup (setting or unsetting the variable,
    queueing the stub's replies) runs once before each timing, outside it.
    CPU time of this process (system time included, so the file writes
    count), not wall time: on a shared machine, time spent waiting for a core
    would land on whichever side happened to be running. Interleaving keeps a
    change of CPU speed from landing on one side only.
    """
    seconds: dict[str, list[float]] = {label: [] for label in works}
    for _ in range(rounds):
        between_rounds()
        for label, (setup, work) in works.items():
            timer = timeit.Timer(work, setup=setup, timer=time.process_time)
            seconds[label].append(timer.timeit(number=runs) / runs)
    return seconds


def paired(
    seconds: dict[str, list[float]], figure: Callable[..., float], *labels: str
) -> tuple[float, float, float]:
    """The median and quartiles over rounds of `figure`, taken of `labels`' times in each round."""
    values = [figure(*times) for times in zip(*(seconds[label] for label in labels), strict=True)]
    if len(values) == 1:
        return values[0], values[0], values[0]
    low, middle, high = statistics.quantiles(values, n=4)
    return middle, low, high


# Which sides are timed together, interleaved round by round: each goal's
# sides, and nothing else, so no side finds its caches cleared by work that
# belongs to another goal (see the module's docstring).
PHASES: dict[str, tuple[str, ...]] = {
    "offline": ("untraced", "traced", "floor"),
    "key": ("traced", "traced, key set"),
    "http": ("http untraced", "http traced"),
    "otel": ("untraced", "traced", "opentelemetry"),
    "parts": ("untraced", "events only", "floor, alone"),
}

# The offline sides counted in instructions, and the flag each is run with.
COUNTED = ("untraced", "traced", "traced, key set", "floor")
COUNT_WARMUP = 5


def instructions_per_run(side: str, runs: int) -> int | None:
    """Instructions a run of one offline side takes, by callgrind; None without valgrind.

    A child process runs this script with `--count`: it warms up, then runs
    the side `runs` times inside one `functools.reduce`, and callgrind counts
    only while that call runs (`--toggle-collect`), so neither start-up nor
    imports nor the warm-up are counted. None when valgrind is missing, or
    when it counted nothing (an interpreter without the symbol to toggle on).
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        command = [
            valgrind,
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--count",
            side,
            "--runs",
            str(runs),
        ]
        # A fixed hash seed: the same dictionaries probe the same way every time.
        environment = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, env=environment)
        if done.returncode != 0:
            raise SystemExit(f"counting {side!r} under valgrind failed:\n{done.stderr[-2000:]}")
        for line in out.read_text(encoding="utf-8").splitlines():
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
                return total // runs if total else None
    return None


def stub_replies(record: RunRecord) -> list[StubResponse]:
    """The offline run's model turns, as the OpenAI-compatible API would send them."""
    replies = []
    for message in record.messages:
        if not isinstance(message, AssistantMessage):
            continue
        if message.tool_calls:
            calls = [(c.id, c.name, c.arguments_json) for c in message.tool_calls]
            replies.append(openai_tool_calls(calls, content=message.content))
        else:
            replies.append(openai_text(message.content))
    return replies


def otel_recording(events: list[dict[str, Any]]) -> Callable[[], None] | None:
    """Recording the run's events as spans with the official SDK, as one call.

    One span per event, its fields as attributes (text as text, the rest as
    their JSON), exported to memory. None when the SDK is not installed.
    Timed in the same rounds as the plan, so that its ratio pairs each
    round's recording with the same round's spans.
    """
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench_trace")

    def record() -> None:
        with tracer.start_as_current_span("run"):
            for event in events:
                attributes = {
                    key: value if isinstance(value, str | int | float | bool) else str(value)
                    for key, value in event.items()
                    if value is not None
                }
                with tracer.start_as_current_span(str(event["event"]), attributes=attributes):
                    pass
        exporter.clear()

    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="runs per timing (default 50)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=30,
        help="rounds of each phase, each timing its sides once (default 30)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each offline side's instructions under valgrind (slow)",
    )
    # Internal: what the child that callgrind watches runs (see instructions_per_run).
    parser.add_argument("--count", choices=COUNTED, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.runs < 1 or options.repeat < 1:
        parser.error("--runs and --repeat must be positive")
    if options.instructions and shutil.which("valgrind") is None:
        parser.error("--instructions needs valgrind on PATH (apt-get install valgrind)")

    shop = runpy.run_path(str(CHAPTER_1))["SHOP"]
    chapter_3 = runpy.run_path(str(CHAPTER_3))
    script, task, system = chapter_3["SHOP_SCRIPT"], chapter_3["TASK"], chapter_3["SYSTEM"]

    def plan_with(model: ModelClient, recorder: Recorder | None = None) -> RunRecord:
        return run_task(
            model,
            build_tools(shop),
            task,
            max_steps=6,
            max_tool_calls=8,
            system=system,
            recorder=recorder,
        )

    def plan(recorder: Recorder | None = None) -> RunRecord:
        return plan_with(ScriptedModel(script), recorder)

    # The events SOVEREIGN_TRACE writes, for the floor to encode: each call's
    # effect classes included, as that recorder writes them (checked below).
    events: list[dict[str, Any]] = []
    offline = plan(Recorder(events.append, effects=True))
    replies = stub_replies(offline)

    with tempfile.TemporaryDirectory() as scratch:
        trace = str(Path(scratch) / "bench.jsonl")
        floor_file = os.open(
            Path(scratch) / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )

        def events_only() -> RunRecord:
            # Every event built and handed to a sink that keeps nothing: what
            # recording costs before any encoding or writing.
            return plan(Recorder(lambda event: None, effects=True))

        def floor_in_run() -> RunRecord:
            # The least any recorder of these events must do, where it must do
            # it: encode each as the run tells of it, write once.
            return plan(FloorRecorder(events, floor_file))

        def floor() -> None:
            # The same work alone, in a loop that does nothing else.
            data = b"".join(encode_event(event) for event in events)
            view = memoryview(data)
            while view:
                view = view[os.write(floor_file, view) :]

        def empty_files() -> None:
            # Both files emptied before each round: a file that grows by
            # megabytes makes every write of both sides dearer by an amount
            # that depends on the kernel's page cache, not on either side.
            if os.path.exists(trace):
                os.truncate(trace, 0)
            os.ftruncate(floor_file, 0)

        def unset() -> object:
            return os.environ.pop(TRACE_VARIABLE, None)

        def set_trace() -> object:
            os.environ.pop(BENCH_KEY, None)
            os.environ[TRACE_VARIABLE] = trace
            return None

        def set_trace_and_key() -> object:
            os.environ[BENCH_KEY] = BENCH_KEY_VALUE
            os.environ[TRACE_VARIABLE] = trace
            return None

        if options.count is not None:
            setup, work = {
                "untraced": (unset, plan),
                "traced": (set_trace, plan),
                "traced, key set": (set_trace_and_key, plan),
                "floor": (unset, floor_in_run),
            }[options.count]
            setup()
            for _ in range(COUNT_WARMUP):
                work()
            # Counted: callgrind collects only while functools.reduce runs.
            functools.reduce(lambda _, __: work(), range(options.runs), None)
            os.close(floor_file)
            return 0

        saved = os.environ.pop(TRACE_VARIABLE, None)
        try:
            set_trace()
            record = plan()
            runs = read_trace(Path(trace))
            if record.stop_reason != StopReason.FINAL_ANSWER or not all(
                run.complete for run in runs
            ):
                print("a traced plan did not finish as chapter 3's does", file=sys.stderr)
                return 1
            events_per_run = len(runs[0].events)
            written = [json.loads(line) for line in Path(trace).read_text().splitlines()]
            if [sorted(line) for line in written] != [sorted(event) for event in events]:
                print("the floor's events do not hold the fields the trace does", file=sys.stderr)
                return 1
            works: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
                "untraced": (unset, plan),
                "traced": (set_trace, plan),
                "events only": (unset, events_only),
                "traced, key set": (set_trace_and_key, plan),
                "floor": (unset, floor_in_run),
                "floor, alone": (unset, floor),
            }
            otel_record = otel_recording(events)
            if otel_record is not None:
                works["opentelemetry"] = (unset, otel_record)

            def timed(phase: str) -> dict[str, list[float]]:
                # A side that could not be made (OpenTelemetry, not installed) is left out.
                sides = {label: works[label] for label in PHASES[phase] if label in works}
                return interleaved_per_run_seconds(
                    sides, options.runs, options.repeat, between_rounds=empty_files
                )

            # The offline phases first, with no server thread in the process:
            # a thread that wakes to poll, as the stub's does, takes the
            # interpreter's lock from the run now and then.
            timings = {phase: timed(phase) for phase in PHASES if phase != "http"}
            with ProviderStub() as stub:
                client = OpenAICompatibleClient("stub-model", base_url=stub.openai_base_url)

                def over_http() -> RunRecord:
                    return plan_with(client)

                def queue_replies() -> None:
                    for _ in range(options.runs):
                        for reply in replies:
                            stub.enqueue(OPENAI_ROUTE, reply)

                def http_unset() -> object:
                    queue_replies()
                    return unset()

                def http_set() -> object:
                    queue_replies()
                    return set_trace()

                queue_replies()
                http_record = over_http()
                stub.requests.clear()
                if http_record.stop_reason != StopReason.FINAL_ANSWER:
                    print("the plan over HTTP did not finish as offline", file=sys.stderr)
                    return 1
                if http_record.answer != offline.answer:
                    print("the plan over HTTP did not answer as offline", file=sys.stderr)
                    return 1
                works["http untraced"] = (http_unset, over_http)
                works["http traced"] = (http_set, over_http)
                timings["http"] = timed("http")
                stub.requests.clear()
        finally:
            os.close(floor_file)
            os.environ.pop(TRACE_VARIABLE, None)
            os.environ.pop(BENCH_KEY, None)
            if saved is not None:
                os.environ[TRACE_VARIABLE] = saved
    run_bytes = sum(len(encode_event(event)) for event in events)

    offline_t, key_t, http_t = timings["offline"], timings["key"], timings["http"]
    best = {
        f"{phase}: {label}": min(seconds)
        for phase, phase_timings in timings.items()
        for label, seconds in phase_timings.items()
    }
    base, cost = best["offline: untraced"], best["offline: traced"]
    events_cost, parts_base = best["parts: events only"], best["parts: untraced"]
    keyless, keyed = best["key: traced"], best["key: traced, key set"]
    floor_cost = best["offline: floor"] - base
    floor_alone = best["parts: floor, alone"]
    http_base, http_cost = best["http: http untraced"], best["http: http traced"]
    otel = best.get("otel: opentelemetry")
    recording = cost - base
    # What the goals are judged on: each round's own figure, the median over rounds.
    recording_m, recording_low, recording_high = paired(
        offline_t, lambda u, t: t - u, "untraced", "traced"
    )
    floor_m, floor_low, floor_high = paired(offline_t, lambda u, f: f - u, "untraced", "floor")
    # A ratio of the two medians: a round's own floor is a small difference,
    # and dividing by it round by round would magnify its noise.
    # A floor measured at or below nothing says only that the rounds were too noisy.
    floor_ratio = None if floor_m <= 0 else (recording_m / floor_m,) * 3
    key_ratio = paired(key_t, lambda t, k: k / t, "traced", "traced, key set")
    http_ratio = paired(http_t, lambda u, t: t / u, "http untraced", "http traced")
    print(f"CPU time per run, best of {options.repeat} interleaved rounds of {options.runs}")
    print(f"chapter 3 plan, untraced:     {base * 1e6:9.1f} us/run")
    print(f"chapter 3 plan, traced:       {cost * 1e6:9.1f} us/run ({cost / base:.3f}x)")
    print(
        f"  events built, none written: {events_cost * 1e6:9.1f} us/run "
        f"({events_cost / parts_base:.3f}x its phase's untraced plan)"
    )
    print(
        f"  traced, a key in the env:   {keyed * 1e6:9.1f} us/run "
        f"({keyed / keyless:.3f}x its phase's keyless plan)"
    )
    print(
        f"  floor (encode {len(events)} events in the run, one write): "
        f"{floor_cost * 1e6:.1f} us/run added; alone: {floor_alone * 1e6:.1f} us/run"
    )
    print(
        f"recording alone: {recording * 1e6:.1f} us/run, "
        f"{recording / events_per_run * 1e6:.1f} us per event ({events_per_run} events a run, "
        f"{run_bytes:,} bytes written a run)"
    )
    print(f"over HTTP, untraced:          {http_base * 1e6:9.1f} us/run")
    print(f"over HTTP, traced:            {http_cost * 1e6:9.1f} us/run")
    print(
        f"rounds' own differences, median (quartiles): recording {recording_m * 1e6:.1f} "
        f"({recording_low * 1e6:.1f}-{recording_high * 1e6:.1f}) us/run, "
        f"floor {floor_m * 1e6:.1f} ({floor_low * 1e6:.1f}-{floor_high * 1e6:.1f}) us/run"
    )
    if otel is not None:
        print(f"OpenTelemetry SDK, same events as spans: {otel * 1e6:.1f} us/run")
    if options.instructions:
        counts = {side: instructions_per_run(side, options.runs) for side in COUNTED}
        counted = {side: count for side, count in counts.items() if count is not None}
        if len(counted) < len(COUNTED):
            print("instructions: not counted (callgrind found nothing to toggle on)")
        else:
            plain, traced = counted["untraced"], counted["traced"]
            keyed_count, floor_count = counted["traced, key set"], counted["floor"]
            print(
                f"instructions per run (callgrind): untraced {plain:,}, traced {traced:,}, "
                f"key set {keyed_count:,}, floor {floor_count:,}"
            )
            print(
                f"  recording {traced - plain:,} / floor {floor_count - plain:,} = "
                f"{(traced - plain) / (floor_count - plain):.3f}x; "
                f"key set / no key {keyed_count / traced:.3f}x"
            )
    otel_ratio = (
        None
        if otel is None
        else paired(
            timings["otel"], lambda u, t, o: (t - u) / o, "untraced", "traced", "opentelemetry"
        )
    )
    rows: list[tuple[str, tuple[float, float, float] | None, str, float, str]] = [
        ("over HTTP, traced / untraced", http_ratio, "<=", HTTP_GOAL, ""),
        (
            "ours / OpenTelemetry SDK",
            otel_ratio,
            "<=",
            OTEL_GOAL,
            "opentelemetry-sdk is not installed",
        ),
        (
            "offline, recording / floor",
            floor_ratio,
            "<=",
            FLOOR_GOAL,
            "the floor's median was not above zero: too noisy to judge",
        ),
        ("key set / no key, traced", key_ratio, "<=", KEY_GOAL, ""),
    ]
    all_met = True
    for label, figures, sign, goal, missing in rows:
        if figures is None:
            all_met = False
            print(f"{label:<30} not measured ({missing}), goal {sign} {goal:.2f}x: MISSED")
            continue
        ratio, low, high = figures
        # A ratio at or below zero is noise (a side measured as costing nothing), not a pass.
        met = 0 < ratio <= goal
        all_met &= met
        # Quartiles where the ratio is taken round by round.
        spread = "" if low == high else f" (quartiles {low:.3f}-{high:.3f})"
        print(
            f"{label:<30} {ratio:6.3f}x{spread}, goal {sign} {goal:.2f}x: "
            f"{'met' if met else 'MISSED'}"
        )
    print("all goals met" if all_met else "some goals missed")
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
