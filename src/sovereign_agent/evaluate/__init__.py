"""Support the book does not print: chapter 4's evaluation, many runs of a suite of tasks, measured.

- `suite`: the TOML suite (the shop, the planted slips, the variants, the tasks
  and their expectations), checked with errors that name the file and the key;
- `sloppy`: the offline stand-in for a model, and the word-matching selector;
- `variants`: the shop's tools with full, emptied or shuffled descriptions;
- `skus`: the same tools with `sku` an enum of the catalogue (section 4.13);
- `metrics`: a run's calls and codes, invalid choices, recoveries, confusions;
- `run`: every variant, task and repeat, each run checked and measured;
- `interval`: how sure a rate is, Wilson's 95% score interval;
- `report`: the table the command prints, and its JSON (one record per run).

`python -m sovereign_agent.evaluate SUITE.toml --repeat N --seed S` is the command line.
"""

from sovereign_agent.evaluate.metrics import (
    INVALID_CHOICES,
    MISTAKES,
    Call,
    calls_of,
    drafts_in,
    invalid_choices,
    recoveries,
    shaped_for,
)
from sovereign_agent.evaluate.run import RunResult, VariantResult, check_expectations, run_suite
from sovereign_agent.evaluate.sloppy import SloppyModel, choose_tool
from sovereign_agent.evaluate.suite import Suite, SuiteError, load_suite
from sovereign_agent.evaluate.variants import described, variant_tools

__all__ = [
    "INVALID_CHOICES",
    "MISTAKES",
    "Call",
    "RunResult",
    "SloppyModel",
    "Suite",
    "SuiteError",
    "VariantResult",
    "calls_of",
    "check_expectations",
    "choose_tool",
    "described",
    "drafts_in",
    "invalid_choices",
    "load_suite",
    "recoveries",
    "run_suite",
    "shaped_for",
    "variant_tools",
]
