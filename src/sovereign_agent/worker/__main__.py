"""Support the book does not print: the worker's command, one process among any number.

    uv run python -m sovereign_agent.worker --store FILE [--once]

It claims runs whose lease is free or expired, renews its lease while it
works, and resumes each run from its journal. With --once it exits when no
run is left unfinished (waiting out the lease of a worker that may have
died); without it, it keeps watching the store for new runs until stopped.
Ctrl-C or SIGTERM stops it: the run it holds is handed back at once (exit
130 or 143), for another worker to resume. One line per run on stdout.
Exit status: 0 when every run it worked on
finished, 1 when one failed (its setup could not build it, or a consequential
call was left in doubt with nothing to tell whether it ran) or the store
refused, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import math
import signal
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from sovereign_agent.leases import DEFAULT_LEASE_SECONDS
from sovereign_agent.store import StoreError, open_store
from sovereign_agent.worker import WorkDone, default_owner, drain

__all__ = ["describe", "main"]


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the worker is, so that it stops as it does for Ctrl-C."""


def terminate(signum: int, frame: object) -> None:
    raise Terminated


def describe(done: WorkDone) -> str:
    if done.status == "FINISHED":
        return (
            f"run {done.run_id}: finished, {done.stop_reason} after {done.steps} step(s);"
            f" {done.replayed_replies} reply(ies) and {done.replayed_outcomes} outcome(s)"
            " from the journal"
        )
    if done.status == "LOST":
        return f"run {done.run_id}: lost the lease: {done.detail}"
    return f"run {done.run_id}: failed: {done.detail}"


def seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be a number of seconds from 0.05 to 3600")
    return value


def parser() -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog="python -m sovereign_agent.worker",
        description="Claim the store's unfinished runs and finish them, each from its journal.",
    )
    command.add_argument("--store", required=True, type=Path, help="the store's database file")
    command.add_argument("--once", action="store_true", help="exit when no run is left unfinished")
    command.add_argument(
        "--lease-seconds",
        type=seconds,
        default=DEFAULT_LEASE_SECONDS,
        help=f"how long a claim holds without renewal (default {DEFAULT_LEASE_SECONDS:g})",
    )
    command.add_argument(
        "--poll-seconds",
        type=seconds,
        default=1.0,
        help="how often to look for claimable runs when there is none (default 1)",
    )
    command.add_argument(
        "--name", default=None, help="the worker's name in the runs' owner column (host:pid)"
    )
    return command


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser().parse_args(argv)
    if not arguments.store.is_file():
        # Opening would create an empty store: a mistyped path must not.
        print(f"error: no store at {arguments.store}", file=sys.stderr)
        return 2
    owner = arguments.name or default_owner()
    signal.signal(signal.SIGTERM, terminate)
    try:
        with closing(open_store(arguments.store)) as connection:
            done = drain(
                str(arguments.store),
                connection,
                owner=owner,
                once=arguments.once,
                lease_seconds=arguments.lease_seconds,
                poll_seconds=arguments.poll_seconds,
                report=lambda outcome: print(describe(outcome), flush=True),
            )
    except KeyboardInterrupt as stop:
        terminated = isinstance(stop, Terminated)
        print(
            f"worker: stopped by {'SIGTERM' if terminated else 'Ctrl-C'};"
            " the run it held, if any, is handed back",
            file=sys.stderr,
        )
        return 143 if terminated else 130
    except (StoreError, sqlite3.Error) as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    return 1 if any(outcome.status == "FAILED" for outcome in done) else 0


if __name__ == "__main__":
    sys.exit(main())
