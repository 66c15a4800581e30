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

# The names chapter 4, its exercises and its checkpoint use; the rest stays
# importable from its module (`sovereign_agent.evaluate.metrics`, ...).
from sovereign_agent.evaluate.metrics import calls_of, drafts_in
from sovereign_agent.evaluate.run import RunResult, VariantResult, run_suite
from sovereign_agent.evaluate.sloppy import SloppyModel
from sovereign_agent.evaluate.suite import Suite, SuiteError, load_suite

__all__ = [
    "RunResult",
    "SloppyModel",
    "Suite",
    "SuiteError",
    "VariantResult",
    "calls_of",
    "drafts_in",
    "load_suite",
    "run_suite",
]
