"""No API key, whole or in part, reaches a trace: a planted key, a real client, a local stub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import MutableMapping
from contextlib import suppress
from pathlib import Path

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from morning_plan import CHAPTER_3, PLAN, SHOP
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    anthropic_error,
    anthropic_tool_use,
    openai_error,
    openai_text,
    openai_tool_calls,
)
from strength import examples

from sovereign_agent import redaction
from sovereign_agent.loop import StopReason, run_task
from sovereign_agent.models import AnthropicClient, ModelReply, OpenAICompatibleClient
from sovereign_agent.models.offline import ScriptedModel
from sovereign_agent.redaction import MIN_END, printable_line
from sovereign_agent.shop import ProductArguments, build_tools
from sovereign_agent.tools import Dispatcher, ExecutableTool
from sovereign_agent.trace import read_trace
from sovereign_agent.trace.recorder import (
    MIN_SECRET_FRAGMENT,
    encode_event,
    holds_secret,
    recorder_from_env,
    redact,
    secrets_from_env,
    utf8_line_search,
)

KEY = "secret-token-5f0e2b9c7a41d3e8"


def fragments(secret: str) -> list[str]:
    return [
        secret[start : start + MIN_SECRET_FRAGMENT]
        for start in range(len(secret) - MIN_SECRET_FRAGMENT + 1)
    ]


def assert_no_piece_of(secret: str, text: str) -> None:
    leaked = [piece for piece in fragments(secret) if piece in text]
    assert not leaked, f"pieces of the key in the trace: {leaked}"


def leaky_supplier(secret: str) -> Dispatcher:
    """The shop's tools and one whose failure quotes the key, as a careless handler might."""

    def fail(args: ProductArguments) -> str:
        raise PermissionError(f"supplier refused key {secret} for {args.sku}")

    shop = build_tools(SHOP)
    leaky = ExecutableTool("supplier_portal", "The supplier's portal.", ProductArguments, fail)
    return Dispatcher(
        [*shop.tools.values(), leaky],
        allowed=[*shop.allowed, "supplier_portal"],
        setup=shop.setup,
    )


def test_a_key_echoed_by_the_provider_the_model_and_a_tool_never_reaches_the_trace(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    masked = f"{KEY[:3]}{'*' * 12}{KEY[-4:]}"
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls(
                [
                    ("c1", "supplier_portal", json.dumps({"sku": "SKU-VANILLA"})),
                    ("c2", "draft_order", json.dumps({"sku": KEY, "quantity": 6})),
                ],
                content=f"I will use the key {KEY}.",
            ),
            openai_error(401, f"Incorrect API key provided: {masked}."),
        )
        environ = {
            "SOVEREIGN_TRACE": str(trace),
            "OPENAI_API_KEY": KEY,
            "PATH": os.environ.get("PATH", ""),
        }
        client = OpenAICompatibleClient("stub-model", api_key=KEY, base_url=stub.openai_base_url)
        record = run_task(
            client,
            leaky_supplier(KEY),
            f"Plan. (The operator pasted {KEY} here by mistake.)",
            max_steps=4,
            max_tool_calls=4,
            recorder=recorder_from_env(environ),
        )
    assert record.stop_reason is StopReason.MODEL_ERROR
    text = trace.read_text(encoding="utf-8")
    assert_no_piece_of(KEY, text)
    # The provider's words are never written: they held the masked key's tail.
    assert "Incorrect API key" not in text and KEY[-4:] not in text
    (run,) = read_trace(trace)
    assert run.complete
    assert run.events[-1].error_type == "ModelHTTPError"  # type: ignore[union-attr]
    failed = [e for e in run.events if e.event == "tool_outcome" and e.code == "tool_failed"]
    assert failed[0].exception_message == "supplier refused key *** for SKU-VANILLA"  # type: ignore[union-attr]


def test_the_anthropic_client_under_the_variable_leaves_no_piece_of_its_key(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    with ProviderStub() as stub:
        stub.enqueue(
            ANTHROPIC_ROUTE,
            anthropic_tool_use([("t1", "supplier_portal", {"sku": "SKU-VANILLA"})], text=KEY),
            anthropic_error(403, f"key {KEY[:10]}... is not allowed"),
        )
        client = AnthropicClient("stub-model", api_key=KEY, base_url=stub.anthropic_base_url)
        run_task(
            client,
            leaky_supplier(KEY),
            "Plan.",
            max_steps=3,
            max_tool_calls=3,
            recorder=recorder_from_env({"SOVEREIGN_TRACE": str(trace), "ANTHROPIC_API_KEY": KEY}),
        )
    assert_no_piece_of(KEY, trace.read_text(encoding="utf-8"))


def test_the_chapter_3_checkpoint_against_the_stub_writes_no_piece_of_the_key(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    with ProviderStub() as stub:
        stub.enqueue(
            OPENAI_ROUTE,
            openai_tool_calls([("c1", "list_stock", "{}")]),
            openai_text(f"Done; my key is {KEY}."),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SOVEREIGN", "OPENAI"))}
        env |= {
            "SOVEREIGN_MODEL": "openai:stub-model",
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": stub.openai_base_url,
            "SOVEREIGN_TRACE": str(trace),
        }
        result = subprocess.run(
            [sys.executable, str(CHAPTER_3)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        sent = stub.requests_to(OPENAI_ROUTE)
    assert result.returncode == 0, result.stderr
    # The key really travelled, in the header the provider reads.
    assert sent[0].headers["authorization"] == f"Bearer {KEY}"
    text = trace.read_text(encoding="utf-8")
    assert_no_piece_of(KEY, text)
    assert "stub-model" in text


def test_only_variables_named_for_secrets_and_long_enough_are_secrets() -> None:
    environ = {
        "OPENAI_API_KEY": " sk-0123456789 ",
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "SHORT_TOKEN": "abc",
        "HOME": "/home/lucy-the-operator",
    }
    assert secrets_from_env(environ) == ("sk-0123456789", "ghp_abcdefgh")


@settings(max_examples=examples(200), deadline=None)
@given(
    secret=st.text(min_size=MIN_SECRET_FRAGMENT, max_size=40).filter(lambda s: s.strip() == s),
    before=st.text(max_size=20),
    after=st.text(max_size=20),
)
def test_redaction_leaves_valid_json_without_any_fragment(
    secret: str, before: str, after: str
) -> None:
    event = {
        "event": "tool_outcome",
        "exception.message": before + secret + after,
        secret: [secret],
    }
    redacted = redact(event, [secret])
    line = json.dumps(redacted)
    assert json.loads(line) == redacted
    assert not holds_secret(line.encode(), [secret])
    for piece in fragments(secret):
        assert piece not in json.dumps(redacted, ensure_ascii=False)


def test_a_reply_is_a_model_reply_and_the_key_is_not_in_it_by_construction() -> None:
    # Guards the test above: what a client hands the loop holds no header.
    assert "api_key" not in ModelReply.model_fields


OLD_KEY = "secret-token-0a1b2c3d4e5f6071"
NEW_KEY = "pk-live-9f8e7d6c5b4a3921"  # shares no eight characters with OLD_KEY


@pytest.mark.parametrize("table", [True, False], ids=["os.environ", "an environ without _data"])
def test_each_run_redacts_the_keys_the_environment_holds_when_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: bool
) -> None:
    trace = tmp_path / "t.jsonl"
    monkeypatch.setenv("SOVEREIGN_TRACE", str(trace))
    monkeypatch.delenv("SUPPLIER_API_KEY", raising=False)
    environ: MutableMapping[str, str] = os.environ
    if not table:
        # What an interpreter whose os.environ keeps no table of its own looks like.
        environ = dict(os.environ)
        monkeypatch.setattr(os, "environ", environ)
    task = f"Plan. The operator pasted {OLD_KEY} and {NEW_KEY} here by mistake."

    def plan() -> None:
        run_task(ScriptedModel(PLAN), build_tools(SHOP), task, max_steps=6, max_tool_calls=8)

    plan()
    environ["SUPPLIER_API_KEY"] = OLD_KEY
    plan()
    environ["SUPPLIER_API_KEY"] = NEW_KEY
    plan()
    del environ["SUPPLIER_API_KEY"]
    plan()
    assert [run.started.task for run in read_trace(trace)] == [
        task,
        task.replace(OLD_KEY, "***"),
        task.replace(NEW_KEY, "***"),
        task,
    ]


def test_values_searched_once_are_searched_again_when_they_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One sink serves every run of the process, and remembers which repeated
    # values (instructions, task, setup, the offer of tools) hold no piece of
    # its key. Instructions, then a tool's description, that quote the key
    # after clean runs are still found and masked, and the clean runs after
    # them are still written whole.
    trace = tmp_path / "t.jsonl"
    monkeypatch.setenv("SOVEREIGN_TRACE", str(trace))
    monkeypatch.setenv("SUPPLIER_API_KEY", KEY)
    quoting = f"Plan. Never show the key {KEY.upper()[2:]}."

    def plan(system: str, dispatcher: Dispatcher) -> None:
        run_task(
            ScriptedModel(PLAN), dispatcher, "Plan.", max_steps=6, max_tool_calls=8, system=system
        )

    def quoting_tool() -> Dispatcher:
        shop = build_tools(SHOP)
        tool = ExecutableTool("supplier_portal", f"Portal; key {KEY}.", ProductArguments, str)
        return Dispatcher([*shop.tools.values(), tool], allowed=[*shop.allowed, "supplier_portal"])

    plan("Plan.", build_tools(SHOP))
    plan(quoting, build_tools(SHOP))
    plan("Plan.", quoting_tool())
    plan("Plan.", build_tools(SHOP))
    written = trace.read_text(encoding="utf-8")
    assert_no_piece_of(KEY.lower(), written.lower())
    starts = [json.loads(line) for line in written.splitlines() if '"run_started"' in line]
    assert [start["gen_ai.system_instructions"] for start in starts] == [
        "Plan.",
        "Plan. Never show the key ***.",
        "Plan.",
        "Plan.",
    ]
    requests = [json.loads(line) for line in written.splitlines() if '"model_request"' in line]
    described = [
        schema["function"]["description"]
        for request in requests
        for schema in request["gen_ai.tool.definitions"]
        if schema["function"]["name"] == "supplier_portal"
    ]
    assert described == ["Portal; key ***."]


def spellings(text: str) -> set[bytes]:
    """Every way a JSON encoder of a trace line may write `text` inside a string."""
    spelled = {json.dumps(text)[1:-1].encode("ascii")}
    with suppress(pydantic_core.PydanticSerializationError):  # a lone surrogate
        spelled.add(pydantic_core.to_json(text)[1:-1])
    return spelled


def ascii_lower(text: str) -> str:
    return "".join(char.lower() if char.isascii() else char for char in text)


def pieces_to_hide(secret: str) -> set[str]:
    """The clients' rule, written out: every MIN_SECRET_FRAGMENT run and the two MIN_END ends."""
    key = ascii_lower(secret)
    if len(key) <= MIN_SECRET_FRAGMENT:
        return {key}
    return {
        *(key[i : i + MIN_SECRET_FRAGMENT] for i in range(len(key) - MIN_SECRET_FRAGMENT + 1)),
        key[:MIN_END],
        key[-MIN_END:],
    }


def holds_a_fragment(line: bytes, secrets: list[str]) -> bool:
    """The plain search: every piece of every secret, in every spelling, in any ASCII case."""
    return any(
        spelling.lower() in line.lower()
        for secret in secrets
        for piece in pieces_to_hide(secret)
        for spelling in spellings(piece)
    )


# Quotes, backslashes, controls, text beyond ASCII and beyond the Basic
# Multilingual Plane, and a lone surrogate: every way a spelling can differ.
CHARACTERS = st.one_of(st.sampled_from('"\\/\n\t\x00\x7fé€\u2028😀𝄞\udc80'), st.characters())
SECRETS = st.lists(
    st.text(CHARACTERS, min_size=MIN_SECRET_FRAGMENT, max_size=24), min_size=1, max_size=3
)


def line_writers() -> st.SearchStrategy[object]:
    standard = lambda event: json.dumps(event, separators=(",", ":")).encode("ascii")  # noqa: E731
    return st.sampled_from([encode_event, standard])


@st.composite
def lines_quoting(draw: st.DrawFn, secrets: list[str]) -> bytes:
    """A trace line whose text is made of random text and pieces of the secrets, long and short."""
    pieces = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            pieces.append(draw(st.text(CHARACTERS, max_size=10)))
        else:
            secret = draw(st.sampled_from(secrets))
            start = draw(st.integers(0, len(secret)))
            # Mostly about a fragment long: the pieces where a search that
            # misses a position would answer wrongly.
            length = st.integers(MIN_SECRET_FRAGMENT - 4, MIN_SECRET_FRAGMENT + 1)
            piece = secret[start : start + draw(length | st.integers(0, len(secret)))]
            # A server may echo a key in another case; the search must not care.
            pieces.append(piece.swapcase() if draw(st.booleans()) else piece)
    write = draw(line_writers())
    line: bytes = write({"event": "model_reply", "content": "".join(pieces)})  # type: ignore[operator]
    return line


@settings(max_examples=examples(400), deadline=None)
@given(data=st.data(), secrets=SECRETS)
def test_the_one_pass_search_answers_as_the_plain_fragment_search(
    data: st.DataObject, secrets: list[str]
) -> None:
    line = data.draw(lines_quoting(secrets))
    assert holds_secret(line, secrets) == holds_a_fragment(line, secrets)


@settings(max_examples=examples(400), deadline=None)
@given(data=st.data(), secrets=SECRETS)
def test_the_search_of_a_line_in_text_answers_as_the_plain_fragment_search(
    data: st.DataObject, secrets: list[str]
) -> None:
    # The recorder searches the lines it writes itself before encoding them:
    # text UTF-8 can encode, folded as text when ASCII. It must answer exactly
    # as the plain search of the encoded line, or a key could slip through.
    line = data.draw(lines_quoting(secrets))
    text = line.decode()
    assert utf8_line_search(secrets)(text) == holds_a_fragment(text.encode(), secrets)


@settings(max_examples=examples(200), deadline=None)
@given(
    secret=st.text(CHARACTERS, min_size=MIN_SECRET_FRAGMENT, max_size=24),
    before=st.text(CHARACTERS, max_size=10),
    after=st.text(CHARACTERS, max_size=10),
    write=line_writers(),
)
def test_a_secret_of_any_characters_is_found_in_a_line_either_encoder_wrote(
    secret: str, before: str, after: str, write: object
) -> None:
    line = write({"event": "model_reply", "content": before + secret + after})  # type: ignore[operator]
    assert holds_secret(line, [secret])


@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(CHARACTERS, max_size=40), cut=st.integers(0, len(KEY)), flip=st.booleans())
def test_the_trace_and_the_clients_hide_a_key_by_one_rule(text: str, cut: int, flip: bool) -> None:
    quoted = KEY.swapcase() if flip else KEY
    message = f"{text[:20]}{quoted[:cut]} {quoted[cut:]}{text[20:]}"
    # A reader's one line differs only in what it does to newlines and controls.
    shown = printable_line(message, [KEY], limit=10_000)
    assert redact({"m": message}, [KEY])["m"] == redaction.redact(message, [KEY])
    assert printable_line(redaction.redact(message, [KEY]), [KEY], limit=10_000) == shown


def test_a_key_upper_cased_or_cut_to_its_ends_never_reaches_the_trace(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "t.jsonl"
    hint = f"{KEY[:4].upper()}...{KEY[-4:].upper()}"
    run_task(
        ScriptedModel(PLAN),
        build_tools(SHOP),
        f"Plan. The supplier's hint for the key was {hint}, the key {KEY.upper()}.",
        max_steps=6,
        max_tool_calls=8,
        recorder=recorder_from_env({"SOVEREIGN_TRACE": str(trace), "SUPPLIER_API_KEY": KEY}),
    )
    (run,) = read_trace(trace)
    assert run.started.task == "Plan. The supplier's hint for the key was ***...***, the key ***."
    lowered = trace.read_text(encoding="utf-8").lower()
    assert not [piece for piece in pieces_to_hide(KEY) if piece in lowered]
