"""An evaluation suite under chapter 13's limits: it can expect each stop they make, by name.

Each suite here is a real TOML file, loaded by `load_suite` and run by
`run_suite` through the real loop and the shop's tools. The model is a
metered stand-in that reports token counts as a provider does (the offline
`SloppyModel` reports none), and for the deadline one that takes real time.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bookproof.layout import REPO_ROOT
from sovereign_agent.evaluate import SuiteError, load_suite, run_suite
from sovereign_agent.evaluate.suite import STOP_REASONS
from sovereign_agent.loop import StopReason
from sovereign_agent.models import (
    AssistantMessage,
    AssistantToolCall,
    Message,
    ModelReply,
    Usage,
)

SUITE_HEAD = """
name = "limits"
max_steps = 6
max_tool_calls = 10

[shop]
products = [{ sku = "SKU-VANILLA", name = "Vanilla", on_hand = 2, reorder_point = 8 }]
prices = { SKU-VANILLA = 250 }

[[variants]]
name = "v"
"""


def task(stop_reason: str, name: str = "look") -> str:
    return (
        f'\n[[tasks]]\nname = "{name}"\ntext = "Look at the stock."\n'
        f'[tasks.expect]\nstop_reason = "{stop_reason}"\n'
    )


def suite_path(tmp_path: Path, *parts: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(SUITE_HEAD + "".join(parts), encoding="utf-8")
    return path


class Looker:
    """Asks for the stock at every step; reports `tokens` read per request so far, and 10 written.

    It sleeps `seconds` before each reply, as a slow provider would.
    """

    def __init__(self, tokens: int, seconds: float = 0.0) -> None:
        self.tokens = tokens
        self.seconds = seconds
        self.requests = 0

    @property
    def label(self) -> str:
        return "metered looker"

    def complete(
        self, messages: Sequence[Message], *, tools: Sequence[dict[str, Any]] = ()
    ) -> ModelReply:
        self.requests += 1
        time.sleep(self.seconds)
        call = AssistantToolCall(id=f"c{self.requests}", name="list_stock", arguments_json="{}")
        return ModelReply(
            message=AssistantMessage(content=None, tool_calls=(call,)),
            model="shop-model",
            finish_reason="tool_calls",
            usage=Usage(input_tokens=self.tokens * self.requests, output_tokens=10),
        )


LIMITED = [
    ("token_budget", "[limits]\nmax_tokens = 250\n", Looker(100)),
    (
        "money_budget",
        "[limits]\nmax_pence = 1\n"
        "[limits.prices.shop-model]\n"
        "input_pence_per_million = 2000\n"
        "output_pence_per_million = 0\n",
        Looker(200),
    ),
    ("deadline", "[limits]\ndeadline_s = 0.05\n", Looker(1, seconds=0.03)),
]


@pytest.mark.parametrize(("reason", "limits", "model"), LIMITED, ids=[r for r, *_ in LIMITED])
def test_a_suite_can_expect_each_stop_a_limit_makes(
    tmp_path: Path, reason: str, limits: str, model: Looker
) -> None:
    suite = load_suite(
        suite_path(tmp_path, limits, task(reason), task("final_answer", name="answered"))
    )
    assert suite.limits is not None
    (result,) = run_suite(suite, repeat=1, seed=0, models=lambda _rng: model)
    stopped, answered = result.runs
    assert stopped.record.stop_reason == StopReason(reason)
    assert stopped.passed
    # The same stop fails a task that expected an answer: the check can fail.
    assert answered.record.stop_reason == StopReason(reason)
    assert answered.failed == ("stop_reason",)
    # The limit stopped the run before the step bound could.
    assert stopped.record.steps < suite.max_steps


def test_without_limits_the_same_model_runs_to_the_step_bound(tmp_path: Path) -> None:
    suite = load_suite(suite_path(tmp_path, task("step_limit")))
    assert suite.limits is None
    (result,) = run_suite(suite, repeat=1, seed=0, models=lambda _rng: Looker(100))
    (run,) = result.runs
    assert run.record.stop_reason is StopReason.STEP_LIMIT
    assert run.passed


def test_the_offline_stand_in_reports_no_tokens_so_a_budget_stops_it_at_once(
    tmp_path: Path,
) -> None:
    suite = load_suite(
        suite_path(tmp_path, "[limits]\nmax_tokens = 100000\n", task("token_budget"))
    )
    (result,) = run_suite(suite, repeat=1, seed=0)
    (run,) = result.runs
    assert run.passed
    assert run.record.steps == 1
    assert run.record.error is not None and "carried no token counts" in run.record.error


def test_an_unknown_stop_reason_is_refused_naming_every_valid_one(tmp_path: Path) -> None:
    path = suite_path(tmp_path, task("token_limit"))
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: tasks[0].expect.stop_reason: unknown stop reason ")
    assert "'token_limit'" in message
    for reason in StopReason:
        assert reason.value in message
    assert tuple(reason.value for reason in StopReason) == STOP_REASONS
    assert "\n" not in message


@pytest.mark.parametrize(
    ("reason", "field"),
    [("token_budget", "max_tokens"), ("money_budget", "max_pence"), ("deadline", "deadline_s")],
)
def test_a_limit_stop_without_its_limit_is_refused_naming_the_field(
    tmp_path: Path, reason: str, field: str
) -> None:
    # A [limits] table that sets some other limit still cannot make this stop.
    path = suite_path(tmp_path, "[limits]\ntool_timeout_s = 5\n", task(reason))
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    assert str(caught.value) == (
        f"{path}: (the whole suite): task 'look': expect.stop_reason {reason} "
        f"needs [limits] {field}"
    )


def test_a_mistake_in_the_limits_names_its_key(tmp_path: Path) -> None:
    path = suite_path(tmp_path, "[limits]\nmax_tokens = 0\n", task("token_budget"))
    with pytest.raises(SuiteError, match=r"limits\.max_tokens: Input should be greater"):
        load_suite(path)
    path = suite_path(tmp_path, "[limits]\nmax_tokenz = 5\n", task("final_answer"))
    with pytest.raises(SuiteError, match=r"limits\.max_tokenz: Extra inputs are not permitted"):
        load_suite(path)


def test_the_command_runs_a_limited_suite_and_reports_the_stop(tmp_path: Path) -> None:
    path = suite_path(tmp_path, "[limits]\nmax_tokens = 100000\n", task("token_budget"))
    report = tmp_path / "report.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sovereign_agent.evaluate",
            str(path),
            "--repeat",
            "2",
            "--seed",
            "1",
            "--json",
            str(report),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    runs = json.loads(report.read_text(encoding="utf-8"))["runs"]
    assert [run["stop_reason"] for run in runs] == ["token_budget", "token_budget"]
    assert all(run["expectations_broken"] == [] for run in runs)


def test_a_model_factory_gets_its_own_dice_per_run(tmp_path: Path) -> None:
    # Limits are per run: a second run of the same task starts with nothing spent.
    suite = load_suite(suite_path(tmp_path, "[limits]\nmax_tokens = 250\n", task("token_budget")))
    models: list[Looker] = []

    def fresh(_rng: random.Random) -> Looker:
        models.append(Looker(100))
        return models[-1]

    (result,) = run_suite(suite, repeat=3, seed=0, models=fresh)
    # Two requests each (110 then 210 tokens); the third would read 210 more.
    assert [run.record.steps for run in result.runs] == [3, 3, 3]
    assert [model.requests for model in models] == [2, 2, 2]
