"""The answer pipe's guards: the child's strict encoder, the grader's decoder and answer grammar."""

from __future__ import annotations

import contextlib
import json
import math
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bookproof.grade.books import load_book
from bookproof.grade.child.encoding import FrameError, decode_json, make_encoder
from bookproof.grade.questions import Answer, same
from bookproof.grade.runner import _HandIn, _run_trial, prepare
from bookproof.grade.session import OUTCOMES, _answer
from bookproof.layout import REPO_ROOT

ROOT = REPO_ROOT
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


# --- the answers a child may send, as the grader reads them --------------------------


@given(st.binary(max_size=200))
def test_any_bytes_on_the_answer_pipe_become_an_answer_or_a_frame_error(data: bytes) -> None:
    try:
        raw = decode_json(data)
        if isinstance(raw, dict):
            _answer(raw)
    except FrameError:
        pass


def test_the_four_shapes_of_an_answer_are_read_exactly() -> None:
    assert _answer({"status": "returned", "value": 9}) == Answer("returned", 9)
    assert _answer({"status": "kept"}) == Answer("kept")
    assert _answer({"status": "wrong_type"}) == Answer("wrong_type")
    assert _answer({"status": "raised", "raised": ["ValueError", "Exception"]}) == Answer(
        "raised", None, frozenset({"ValueError", "Exception"})
    )


@pytest.mark.parametrize(
    "raw",
    [
        # an exception name outside the fixed list (could carry a secret)
        {"status": "raised", "raised": ["secret-token-x"]},
        # an extra key smuggled into an answer
        {"status": "kept", "passed": True},
        {"status": "returned", "value": 1, "points": 2},
        # a status the harness never writes
        {"status": "passed"},
        {"status": "returned"},
    ],
)
def test_answers_the_harness_never_writes_are_refused(raw: dict[str, Any]) -> None:
    with pytest.raises(FrameError):
        _answer(raw)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
any_answer = st.one_of(
    st.builds(Answer, st.just("returned"), json_values),
    st.just(Answer("kept")),
    st.just(Answer("wrong_type")),
    st.builds(
        lambda names: Answer("raised", None, frozenset(names)),
        st.sets(st.sampled_from(["ValueError", "KeyError", "MemoryError", "Exception"])),
    ),
)


class ScriptedSession:
    """Answers every question with whatever the test draws: the grader must cope with all of it."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def begin(self) -> None:
        pass

    def ask(self, op: dict[str, Any]) -> Answer:
        return self.data.draw(any_answer)


@pytest.mark.parametrize("number", [1, 2, 3, 4, 5, 6, 7, 8])
# Book 4's checks run suites in the grading process: slower than a deadline made for book 1.
@settings(deadline=None)
@given(data=st.data())
def test_every_check_turns_any_answers_into_an_outcome(number: int, data: st.DataObject) -> None:
    # Answers are the submission's: whatever their shape, the grader answers
    # with an outcome and points, and never crashes. So are the files a check
    # reads itself (book 4's suite.toml): the reference's, or any text at all.
    book = load_book(number)
    check = data.draw(st.sampled_from([c for c in book.checks if c.trial is not None]))
    seed = data.draw(st.integers(0, 10**6))
    # Folders are the grader's own: here only their paths matter.
    folders = iter(range(1000))
    prepared = prepare(check, random.Random(seed), lambda _: f"/files/f{next(folders)}")
    with tempfile.TemporaryDirectory() as folder:
        for name in book.files:
            reference = (ROOT / "solutions" / book.folder / name).read_text(encoding="utf-8")
            text = data.draw(st.one_of(st.just(reference), st.text(max_size=500)))
            (Path(folder) / name).write_text(text, encoding="utf-8")
        outcome = _run_trial(
            check,
            ScriptedSession(data),  # type: ignore[arg-type]
            prepared,
            _HandIn(Path(folder), book.files),
        )
    assert outcome.outcome in OUTCOMES
    assert outcome.points in (0, check.points)
    assert "secret-token" not in outcome.feedback
