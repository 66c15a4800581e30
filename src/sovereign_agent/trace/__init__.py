"""Support the book does not print: chapter 4's traces, every run written down, read back, replayed.

- `format`: the trace format (version 1), the schema fingerprint, the reader;
- `recorder`: what `run_task` tells as it runs, and the sinks that keep it
  (`SOVEREIGN_TRACE=path.jsonl` appends every run to that file);
- `replay`: a recorded run again, offline, against today's runtime;
- `summary`: every refusal and stop, counted by class;
- `timeline`: one run laid out step by step, for a terminal or a page;
- `otlp`: the runs as OpenTelemetry spans, in OTLP's JSON encoding.

The package holds both sides of the agent loop. `format` and `recorder` sit
below it: the loop imports the recorder to tell it what happens, and neither
imports the loop. `replay` and `__main__` sit above it: the replay runs the
loop. (`summary`, `timeline` and `otlp` only read a trace.) This file imports
only the two below, so importing the loop never starts the replay
(`tests/test_import_layers.py` holds both).

`python -m sovereign_agent.trace replay|summary|show|export TRACE.jsonl` is the command line.
The format is described field by field in `README.md`, beside this file.
"""

from sovereign_agent.trace.format import (
    FORMAT_VERSION,
    RecordedRun,
    TraceFormatError,
    parse_trace,
    read_trace,
    schema_fingerprint,
)
from sovereign_agent.trace.recorder import (
    TRACE_VARIABLE,
    JsonLinesFile,
    Recorder,
    TraceWriteError,
    recorder_from_env,
)

__all__ = [
    "FORMAT_VERSION",
    "TRACE_VARIABLE",
    "JsonLinesFile",
    "RecordedRun",
    "Recorder",
    "TraceFormatError",
    "TraceWriteError",
    "parse_trace",
    "read_trace",
    "recorder_from_env",
    "schema_fingerprint",
]
