"""Support the book does not print: `python -m sovereign_agent.evaluate`, a suite's figures.

    python -m sovereign_agent.evaluate SUITE.toml --repeat N --seed S [--json FILE] [--quiet]

Exit status: 0 when the suite ran (whatever its pass rates), 2 when the suite,
the options or the model cannot be used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from sovereign_agent.evaluate.interval import CONFIDENCE
from sovereign_agent.evaluate.report import format_report, run_records, to_json
from sovereign_agent.evaluate.run import ModelFactory, VariantResult, run_suite
from sovereign_agent.evaluate.suite import Suite, SuiteError, load_suite
from sovereign_agent.models import MODEL_VARIABLE, ModelError, model_from_env
from sovereign_agent.trace.format import TraceFormatError, read_trace
from sovereign_agent.trace.inputs import printable
from sovereign_agent.trace.recorder import TRACE_VARIABLE

# Each repeat runs every task under every variant, and with SOVEREIGN_MODEL set
# each run is real, paid requests: the bound keeps one slip of the keyboard
# (--repeat 100000) from ordering millions of them. A thousand repeats already
# put a pass rate's sampling error under two points.
MAX_REPEAT = 1000

EPILOG = """\
Offline (the default), every run is played by a scripted stand-in that does
the re-order job and slips as the suite's [model] table says: a quantity sent
as text, a tool nobody offered, a misspelled sku. The slips are drawn from the
seed, so the same seed prints the same table. It chooses tools by the words of
their names and descriptions: comparing descriptions with it is a smoke test
of the measuring, not a study of how a model reads.

With SOVEREIGN_MODEL naming a provider (see chapter 1), every run asks that
model instead: the same tasks, tools, bounds and expectations; the slips and
the seed then play no part, and each run costs a real request or several.

columns: pass rate (runs whose every expectation held); steps and tool calls
(means per run); invalid choices (calls refused for the tool, the arguments
or the syntax the model chose, over all calls); recovery (refused or failed
calls followed by a corrected one, over all such calls). Each rate is followed
by its 95% interval (Wilson's score interval), in parentheses: two variants whose
intervals overlap widely have not been told apart. Calls of one run are not
independent, so the intervals over calls understate the uncertainty.

--json FILE holds the same figures with their intervals, and one record per
run: its variant, task, repeat, seed, outcome, the expectations it broke and,
with SOVEREIGN_TRACE set, its run id and lines in that trace.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sovereign_agent.evaluate",
        description="Run an evaluation suite and print pass rate, steps, tool calls, "
        "invalid choices, recovery and tool confusion per variant.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("suite", type=Path, metavar="SUITE.toml", help="the suite to run")
    parser.add_argument(
        "--repeat",
        type=int,
        default=10,
        metavar="N",
        help=f"runs of each task per variant, 1 to {MAX_REPEAT} (default 10); the bound "
        "keeps one typo from ordering millions of runs, each real requests with a real model",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of the planted slips (default 0)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME",
        help="run only this variant of the suite (repeat the option for more; default: all), "
        "reported in the suite's order",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def _only(suite: Suite, names: Sequence[str] | None) -> Suite:
    """The suite with only the variants named, in the suite's order.

    Every run is seeded by its task and repeat, never by its variant, so a
    variant run alone plays exactly the runs it plays beside the others: a
    subset changes which rows are printed, not what any row says.
    """
    if not names:
        return suite
    declared = [variant.name for variant in suite.variants]
    unknown = [name for name in names if name not in declared]
    if unknown:
        raise SuiteError(
            f"the suite has no variant {unknown[0]!r}; its variants are "
            + ", ".join(repr(name) for name in declared)
        )
    wanted = set(names)
    kept = [variant for variant in suite.variants if variant.name in wanted]
    return suite.model_copy(update={"variants": kept})


def _models(environ: dict[str, str]) -> tuple[ModelFactory | None, str]:
    """The model factory and how to describe it; None means the suite's scripted stand-in."""
    choice = environ.get(MODEL_VARIABLE, "").strip() or "offline"
    if choice == "offline":
        return None, ""
    first = model_from_env(environ)  # raises ModelError for a choice it cannot build
    return (lambda rng: model_from_env(environ)), first.label


def _header(suite: Suite, path: Path, repeat: int, seed: int, real_model: str) -> list[str]:
    runs = len(suite.tasks) * repeat
    if real_model:
        model = (
            f"model: {real_model} ({MODEL_VARIABLE}); the planted slips and the seed play no part"
        )
    else:
        slips = suite.model
        model = (
            f"model: offline stand-in, seed {seed}; slips per call: quantity as text "
            f"{slips.quantity_as_text:g}, invented tool {slips.invented_tool:g}, "
            f"wrong sku {slips.wrong_sku:g}"
        )
    return [
        f"suite: {suite.name} ({path.name})",
        model,
        f"runs: {len(suite.tasks)} task(s) x {repeat} repeat(s) = {runs} per variant; "
        f"bounds {suite.max_steps} steps, {suite.max_tool_calls} tool calls",
        "",
    ]


def _write_atomically(path: Path, text: str) -> None:
    # A temporary file beside the target, then a rename: a crash leaves the
    # old file whole, never half a report.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _trace_lines(
    results: Sequence[VariantResult], warn: Callable[[str], None]
) -> tuple[str | None, dict[str, tuple[int, int]]]:
    """The trace file the runs went to, and each of their runs' first and last lines in it.

    Read back after the suite: other processes may have appended to the same
    file meanwhile, and the reader groups lines by run whatever the order.
    A trace that cannot be read (another writer broke a line) costs the line
    numbers only, with a warning: the run ids still point into it.
    """
    named = os.environ.get(TRACE_VARIABLE, "").strip()
    ids = {run.trace_run for result in results for run in result.runs if run.trace_run}
    if not named or not ids:
        return None, {}
    try:
        runs = read_trace(Path(named))
    except TraceFormatError as error:
        warn(f"warning: the runs' lines in the trace are left out: {error}")
        return named, {}
    return named, {run.run_id: (run.lines[0], run.lines[-1]) for run in runs if run.run_id in ids}


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    if not 1 <= options.repeat <= MAX_REPEAT:
        print(
            f"error: --repeat must be 1 to {MAX_REPEAT}: every repeat runs each task under "
            "each variant, and with a real model each run is real requests",
            file=sys.stderr,
        )
        return 2
    try:
        suite = _only(load_suite(options.suite), options.variant)
        models, real_model = _models(dict(os.environ))
    except (SuiteError, ModelError) as error:
        print(printable(f"error: {error}"), file=sys.stderr)
        return 2

    # Names in the report come from the suite's text: escaped like a trace's,
    # so that a downloaded suite cannot send a terminal commands.
    def progress(line: str) -> None:
        print(printable(line), file=sys.stderr, flush=True)

    results = run_suite(
        suite,
        repeat=options.repeat,
        seed=options.seed,
        models=models,
        progress=None if options.quiet else progress,
    )
    header = _header(suite, options.suite, options.repeat, options.seed, real_model)
    print("\n".join(printable(line) for line in [*header, *format_report(results)]))
    if options.json is not None:
        trace, lines = _trace_lines(results, progress)
        document = {
            "suite": suite.name,
            "repeat": options.repeat,
            "seed": None if real_model else options.seed,
            "model": real_model or "offline stand-in",
            "interval": f"Wilson score, {100 * CONFIDENCE:.0f}%",
            "variants": to_json(results),
            "runs": run_records(results, trace=trace, trace_lines=lines),
        }
        try:
            _write_atomically(options.json, json.dumps(document, indent=2) + "\n")
        except OSError as error:
            print(f"error: cannot write {options.json}: {error.strerror}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
