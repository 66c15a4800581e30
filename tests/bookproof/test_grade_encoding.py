"""The result channel's two guards: the strict encoder (child) and the strict decoder (grader)."""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bookproof.grade.checks import Result, Step, Trial, same
from bookproof.grade.encoding import FrameError, decode_json, make_encoder
from bookproof.grade.runner import _parse_channel, _Run

encode = make_encoder()

plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@given(plain)
def test_plain_values_round_trip_exactly(value: Any) -> None:
    text = encode(value)
    assert text is not None
    assert same(value, json.loads(text))


class ClaimsEquality:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class SubDict(dict):
    pass


class SubStr(str):
    pass


class SubInt(int):
    pass


impostors = st.sampled_from(
    [
        ClaimsEquality(),
        SubDict(a=1),
        SubStr("ok"),
        SubInt(9),
        {1: "int key"},
        {"k": {1, 2}},
        b"bytes",
        math.nan,
        math.inf,
        10**40,
        object(),
        (lambda: None),
    ]
)


@given(plain, impostors, st.integers(min_value=0, max_value=3))
def test_any_value_holding_an_impostor_is_refused_whole(
    value: Any, impostor: Any, where: int
) -> None:
    wrapped: Any = [
        [value, impostor],
        {"v": value, "x": impostor},
        {"deep": [[{"x": impostor}]]},
        impostor,
    ][where]
    assert encode(wrapped) is None


def test_cycles_and_depth_bombs_are_refused_not_looped_on() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    assert encode(cycle) is None
    deep: Any = 0
    for _ in range(10_000):
        deep = [deep]
    assert encode(deep) is None


@given(st.binary(max_size=200))
def test_decoder_accepts_only_json_or_raises_frame_error(data: bytes) -> None:
    with contextlib.suppress(FrameError):
        decode_json(data)


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": 1, "a": 2}', "[Infinity]", "1" * 40])
def test_decoder_refuses_what_the_encoder_never_writes(text: str) -> None:
    with pytest.raises(FrameError):
        decode_json(text)


def test_same_tells_booleans_floats_and_ints_apart() -> None:
    assert same(1300, 1300)
    assert not same(1, True)
    assert not same(9, 9.0)
    assert not same({"ok": True}, {"ok": 1})
    assert not same([1, 2], [1, 2, 3])


TRIALS = [Trial((Step({"op": "attrs"}), Step({"op": "attrs"})), lambda r: None)]


@given(st.lists(st.binary(max_size=80), max_size=6))
def test_channel_parser_never_trusts_arbitrary_bytes(lines: list[bytes]) -> None:
    run = _Run()
    try:
        _parse_channel(b"\n".join(lines) + b"\n", "nonce", TRIALS, run)
    except FrameError:
        return
    # Whatever parsed had to carry the nonce, so random bytes can add no result.
    assert run.results == {}


def _frames(*frames: dict[str, Any]) -> bytes:
    return b"".join(json.dumps({**f, "n": "N"}).encode() + b"\n" for f in frames)


def test_channel_parser_accepts_the_harness_grammar() -> None:
    run = _Run()
    ok = {"status": "returned", "value": 9}
    data = _frames(
        {"k": "start"},
        {"k": "imported"},
        {"k": "step", "t": 0, "s": 0, "r": ok},
        {"k": "step", "t": 0, "s": 1, "r": {"status": "raised", "raised": ["ValueError"]}},
        {"k": "done"},
    )
    _parse_channel(data, "N", TRIALS, run)
    assert run.done
    assert run.results[0][0] == Result("returned", 9)
    assert run.results[0][1] == Result("raised", None, frozenset({"ValueError"}))


@pytest.mark.parametrize(
    "frames",
    [
        # a second "done", as a submission writing to the pipe would add
        [{"k": "start"}, {"k": "imported"}, {"k": "done"}],
        # steps out of order
        [
            {"k": "start"},
            {"k": "imported"},
            {"k": "step", "t": 0, "s": 1, "r": {"status": "saved"}},
        ],
        # an exception name outside the fixed list (could carry a secret)
        [
            {"k": "start"},
            {"k": "imported"},
            {"k": "step", "t": 0, "s": 0, "r": {"status": "raised", "raised": ["secret-token-x"]}},
        ],
        # an extra key smuggled into a result
        [
            {"k": "start"},
            {"k": "imported"},
            {"k": "step", "t": 0, "s": 0, "r": {"status": "saved", "passed": True}},
        ],
    ],
)
def test_channel_parser_rejects_forged_frames(frames: list[dict[str, Any]]) -> None:
    with pytest.raises(FrameError):
        _parse_channel(_frames(*frames), "N", TRIALS, _Run())


def test_channel_parser_rejects_frames_without_this_runs_nonce() -> None:
    data = json.dumps({"k": "start", "n": "other"}).encode() + b"\n"
    with pytest.raises(FrameError):
        _parse_channel(data, "N", TRIALS, _Run())


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
any_result = st.one_of(
    st.builds(Result, st.just("returned"), json_values),
    st.just(Result("saved")),
    st.just(Result("wrong_type")),
    st.builds(
        lambda names: Result("raised", None, frozenset(names)),
        st.sets(st.sampled_from(["ValueError", "KeyError", "MemoryError", "Exception"])),
    ),
)


@given(st.data())
def test_book02_judges_turn_any_observation_into_an_outcome(data: st.DataObject) -> None:
    # Observations are the submission's: whatever their shape, the grader
    # answers with an outcome and points, and never crashes.
    import random

    from bookproof.grade.books import load_book
    from bookproof.grade.checks import OUTCOMES
    from bookproof.grade.runner import _judge

    book = load_book(2)
    trials = book.trials(random.Random(data.draw(st.integers(0, 10**6))))
    check = data.draw(st.sampled_from(book.CHECKS))
    trial = trials[check.id]
    results = [data.draw(any_result) for _ in trial.steps]
    outcome = _judge(check, trial, results)
    assert outcome.outcome in OUTCOMES
    assert outcome.points in (0, check.points)
