"""The shared HTTP layer: timeouts, retries, refusals, and keys kept out of every message."""

from __future__ import annotations

import json
import logging
import pickle
import re
import socket
import threading
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_stub import (
    ANTHROPIC_ROUTE,
    OPENAI_ROUTE,
    ProviderStub,
    StubResponse,
    anthropic_error,
    anthropic_text,
    openai_error,
    openai_text,
    raw_reply,
)
from pydantic import ValidationError

from sovereign_agent.models import (
    AnthropicClient,
    HTTPSettings,
    ModelConfigurationError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelUnavailableError,
    OpenAICompatibleClient,
    UserMessage,
)
from sovereign_agent.models.http import Secret, display_url, parse_retry_after
from sovereign_agent.redaction import MIN_END, MIN_FRAGMENT, printable_line

KEY = "secret-token-http-77aa"
HI = [UserMessage(content="hi")]


@pytest.fixture
def stub():
    with ProviderStub() as server:
        yield server


def openai(stub: ProviderStub, **options) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(
        "test-model", api_key=KEY, base_url=stub.openai_base_url, **options
    )


def closed_port() -> int:
    # Bind then close: nothing listens there afterwards, so a connection is refused.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_reply_slower_than_the_timeout_is_a_one_line_unavailable_error(stub):
    stub.enqueue(OPENAI_ROUTE, StubResponse(200, openai_text("late").body, delay_s=30))
    client = openai(stub, settings=HTTPSettings(timeout_s=0.3, max_retries=0))
    with pytest.raises(ModelUnavailableError) as caught:
        client.complete(HI)
    assert (
        str(caught.value) == f"no reply from {stub.openai_base_url}/chat/completions within 0.3 s"
    )


def test_an_unreachable_server_is_named_without_errno_text():
    port = closed_port()
    client = OpenAICompatibleClient("m", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ModelUnavailableError) as caught:
        client.complete(HI)
    assert str(caught.value) == (
        f"cannot reach http://127.0.0.1:{port}/v1/chat/completions: connection refused"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "is not JSON"),
        (b"<html>502 Bad Gateway</html>", "is not JSON"),
        (b"\xff\xfe", "is not JSON"),
        (b"[1, 2]", "is JSON but not an object"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_a_response_error(stub, body, message):
    stub.enqueue(OPENAI_ROUTE, raw_reply(body))
    with pytest.raises(ModelResponseError) as caught:
        openai(stub).complete(HI)
    assert str(caught.value) == f"the reply from {stub.openai_base_url}/chat/completions {message}"


def test_retry_after_as_an_http_date_is_honoured(stub):
    waits: list[float] = []
    # A date long past means "retry now"; the wait is clamped at zero, never negative.
    stub.enqueue(
        OPENAI_ROUTE,
        openai_error(503, "maintenance", retry_after="Wed, 21 Oct 2015 07:28:00 GMT"),
        openai_text("back"),
    )
    assert openai(stub, sleep=waits.append).complete(HI).message.content == "back"
    assert waits == [0.0]


def test_a_huge_retry_after_is_capped(stub):
    waits: list[float] = []
    stub.enqueue(OPENAI_ROUTE, openai_error(429, "later", retry_after="86400"), openai_text("ok"))
    client = openai(stub, sleep=waits.append, settings=HTTPSettings(max_retry_wait_s=5))
    client.complete(HI)
    assert waits == [5.0]


def test_retries_are_bounded_and_the_last_error_is_reported(stub):
    waits: list[float] = []
    stub.enqueue(OPENAI_ROUTE, *[openai_error(500, "boom", retry_after="1")] * 5)
    client = openai(stub, sleep=waits.append, settings=HTTPSettings(max_retries=2))
    with pytest.raises(ModelHTTPError) as caught:
        client.complete(HI)
    assert caught.value.status == 500
    assert "boom (gave up after 3 attempts)" in str(caught.value)
    assert len(stub.requests) == 3
    assert stub.pending(OPENAI_ROUTE) == 2
    assert waits == [1.0, 1.0]


ELSEWHERE = "/elsewhere/chat/completions"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_so_the_key_stays_home(stub, status):
    # The redirect's target holds a valid reply: a client that followed it
    # would return that reply instead of raising, and this test would fail.
    stub.enqueue(ELSEWHERE, openai_text("followed the redirect"))
    location = {"Location": f"{stub.base_url}{ELSEWHERE}"}
    stub.enqueue(OPENAI_ROUTE, StubResponse(status, {}, location))
    with pytest.raises(ModelHTTPError) as caught:
        openai(stub).complete(HI)
    assert caught.value.status == status
    assert str(caught.value) == (
        f"HTTP {status} from {stub.openai_base_url}/chat/completions: "
        "redirects are not followed (the key would travel with them)"
    )
    assert [request.path for request in stub.requests] == [OPENAI_ROUTE]
    assert stub.pending(ELSEWHERE) == 1


def test_an_error_body_that_is_not_json_is_shown_on_one_short_line(stub):
    stub.enqueue(OPENAI_ROUTE, raw_reply(b"bad\ngateway " * 200, status=400))
    with pytest.raises(ModelHTTPError) as caught:
        openai(stub).complete(HI)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"HTTP 400 from {stub.openai_base_url}/chat/completions: bad gateway")
    assert len(text) < 400


@pytest.mark.parametrize("base_url", ["file:///etc/passwd", "ftp://host/v1", "localhost:11434"])
def test_base_urls_other_than_http_are_refused(base_url):
    with pytest.raises(ModelConfigurationError, match="must be an http:// or https:// URL"):
        OpenAICompatibleClient("m", api_key=KEY, base_url=base_url)


def test_credentials_and_query_in_a_base_url_never_reach_an_error():
    port = closed_port()
    url = f"http://user:{KEY}@127.0.0.1:{port}/v1?api-key={KEY}"
    with pytest.raises(ModelUnavailableError) as caught:
        OpenAICompatibleClient("m", base_url=url).complete(HI)
    assert KEY not in str(caught.value)


def test_a_key_with_a_line_break_is_refused_without_echoing_it():
    with pytest.raises(ModelConfigurationError) as caught:
        OpenAICompatibleClient("m", api_key=f"{KEY}\nX-Evil: 1", base_url="http://127.0.0.1:1/v1")
    assert KEY not in str(caught.value)
    assert "OPENAI_API_KEY contains" in str(caught.value)


def test_retry_logging_never_contains_the_key(stub, caplog):
    stub.enqueue(OPENAI_ROUTE, openai_error(429, f"key {KEY} is rate limited"), openai_text("ok"))
    with caplog.at_level(logging.DEBUG, logger="sovereign_agent.models"):
        openai(stub, sleep=lambda _: None).complete(HI)
    assert re.search(r"retrying in \d\.\d s \(attempt 1 of 3\)", caplog.text)
    assert KEY not in caplog.text


def test_every_failure_from_both_clients_is_free_of_the_key(stub):
    failures: list[ModelError] = []
    responses = [
        openai_error(401, f"bad key {KEY}"),
        raw_reply(f"oops {KEY}".encode()),
        StubResponse(200, {"choices": [{"message": {"content": KEY, "tool_calls": 3}}]}),
    ]
    for response in responses:
        stub.enqueue(OPENAI_ROUTE, response)
        stub.enqueue(ANTHROPIC_ROUTE, response)
        anthropic = AnthropicClient("m", api_key=KEY, base_url=stub.anthropic_base_url)
        for client in (openai(stub), anthropic):
            with pytest.raises(ModelError) as caught:
                client.complete(HI)
            failures.append(caught.value)
    assert len(failures) == 6
    for failure in failures:
        assert KEY not in str(failure)
        assert KEY not in repr(failure)
        assert "\n" not in str(failure)


def test_the_stub_answers_unscripted_routes_with_a_404(stub):
    stub.enqueue(ANTHROPIC_ROUTE, anthropic_text("only for anthropic"))
    with pytest.raises(ModelHTTPError, match="no scripted response for /v1/chat/completions"):
        openai(stub).complete(HI)


def test_secret_masks_itself_everywhere():
    secret = Secret(KEY)
    assert KEY not in f"{secret} {secret!r} {secret:>40}"
    assert secret.reveal() == KEY
    with pytest.raises(TypeError):
        pickle.dumps(secret)


# -- property tests over untrusted header and URL text -------------------
@given(st.text(max_size=60), st.floats(min_value=0, max_value=600))
def test_retry_after_is_none_or_within_zero_and_the_cap(value, cap):
    wait = parse_retry_after(value, cap=cap, now=datetime(2026, 1, 1, tzinfo=UTC))
    assert wait is None or 0.0 <= wait <= cap


@given(st.integers(min_value=0, max_value=10**9))
def test_retry_after_seconds_are_read_exactly_below_the_cap(seconds):
    assert parse_retry_after(str(seconds), cap=10**9) == float(seconds)


# What RFC 3986 allows unescaped in a password (unreserved and sub-delims).
USERINFO = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;="


@given(st.text(alphabet=USERINFO, min_size=1, max_size=40))
def test_display_url_drops_userinfo_and_query(secret):
    marked = f"KEY{secret}"
    shown = display_url(f"https://u:{marked}@example.test/v1?key={marked}")
    assert shown == "https://example.test/v1"


# -- the same transport behaviours, through each provider's client --------
PROVIDERS = {
    "openai": (OPENAI_ROUTE, openai_text, openai_error),
    "anthropic": (ANTHROPIC_ROUTE, anthropic_text, anthropic_error),
}


def client_of(provider: str, stub: ProviderStub, **options):
    if provider == "openai":
        return openai(stub, **options)
    return AnthropicClient("test-model", api_key=KEY, base_url=stub.anthropic_base_url, **options)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_client_honours_retry_after_on_429(stub, provider):
    route, text, error = PROVIDERS[provider]
    waits: list[float] = []
    stub.enqueue(route, error(429, "rate limited", retry_after="3"), text("after"))
    reply = client_of(provider, stub, sleep=waits.append).complete(HI)
    assert reply.message.content == "after"
    assert waits == [3.0]
    assert [r.path for r in stub.requests] == [route, route]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_client_times_out_on_a_slow_reply(stub, provider):
    route, text, _ = PROVIDERS[provider]
    stub.enqueue(route, StubResponse(200, text("late").body, delay_s=30))
    client = client_of(provider, stub, settings=HTTPSettings(timeout_s=0.25, max_retries=0))
    with pytest.raises(ModelUnavailableError, match=r"within 0\.25 s$"):
        client.complete(HI)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_client_reports_malformed_json(stub, provider):
    route, _, _ = PROVIDERS[provider]
    stub.enqueue(route, raw_reply(b'{"content": [ {"type": "text", '))
    with pytest.raises(ModelResponseError, match=r"is not JSON$"):
        client_of(provider, stub).complete(HI)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_reply_cut_off_before_its_content_length_is_a_response_error(stub, provider):
    route, text, _ = PROVIDERS[provider]
    body = json.dumps(text("complete reply").body).encode()
    stub.enqueue(route, StubResponse(200, body[:20], declared_length=len(body)))
    with pytest.raises(ModelResponseError, match=r"ended before its announced length$"):
        client_of(provider, stub).complete(HI)


def test_a_server_that_does_not_speak_http_is_a_response_error():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]

        def answer() -> None:
            connection, _ = server.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        client = OpenAICompatibleClient("m", base_url=f"http://127.0.0.1:{port}/v1")
        with pytest.raises(ModelResponseError, match=r"is broken HTTP \(BadStatusLine\)$"):
            client.complete(HI)
        thread.join(timeout=5)


# -- settings are checked when built ------------------------------------
@pytest.mark.parametrize(
    "options",
    [
        {"max_retries": 2.5},
        {"max_retries": 2.0},
        {"max_retries": True},
        {"max_retries": -1},
        {"max_retries": 11},
        {"timeout_s": True},
        {"timeout_s": "30"},
        {"timeout_s": 0},
        {"timeout_s": float("nan")},
        {"timeout_s": float("inf")},
        {"deadline_s": False},
        {"max_retry_wait_s": -0.5},
        {"timeout": 30},
    ],
    ids=repr,
)
def test_settings_refuse_a_wrong_value_when_built(options):
    with pytest.raises(ValidationError):
        HTTPSettings(**options)


def test_settings_take_whole_seconds_and_are_frozen():
    settings = HTTPSettings(timeout_s=5, deadline_s=20)
    assert (settings.timeout_s, settings.deadline_s) == (5.0, 20.0)
    with pytest.raises(ValidationError):
        settings.max_retries = 3  # type: ignore[misc]


# -- what is retried, and for how long -----------------------------------
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_connection_reset_is_retried(stub, provider):
    route, text, _ = PROVIDERS[provider]
    waits: list[float] = []
    stub.enqueue(route, StubResponse(reset=True), text("after the reset"))
    reply = client_of(provider, stub, sleep=waits.append).complete(HI)
    assert reply.message.content == "after the reset"
    assert len(stub.requests) == 2
    assert len(waits) == 1 and 0.5 <= waits[0] <= 1.0


def test_a_reset_on_every_attempt_is_reported_once_with_the_attempt_count(stub):
    stub.enqueue(OPENAI_ROUTE, *[StubResponse(reset=True)] * 3)
    with pytest.raises(ModelUnavailableError) as caught:
        openai(stub, sleep=lambda _: None).complete(HI)
    assert str(caught.value).startswith(f"cannot reach {stub.openai_base_url}/chat/completions: ")
    assert str(caught.value).endswith("(gave up after 3 attempts)")


def test_an_attempt_that_runs_out_of_time_is_retried(stub):
    waits: list[float] = []
    stub.enqueue(OPENAI_ROUTE, StubResponse(200, openai_text("late").body, delay_s=30))
    stub.enqueue(OPENAI_ROUTE, openai_text("in time"))
    client = openai(stub, sleep=waits.append, settings=HTTPSettings(timeout_s=0.3))
    assert client.complete(HI).message.content == "in time"
    assert len(waits) == 1


def test_the_call_deadline_ends_the_retries(stub):
    stub.enqueue(OPENAI_ROUTE, *[StubResponse(200, openai_text("late").body, delay_s=30)] * 5)
    options = HTTPSettings(timeout_s=0.3, deadline_s=0.5, max_retries=4, max_retry_wait_s=0.01)
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError) as caught:
        openai(stub, settings=options).complete(HI)
    assert time.monotonic() - started < 0.5 + 2.0  # the deadline, and a busy machine's margin
    assert str(caught.value) == (
        f"no reply from {stub.openai_base_url}/chat/completions within 0.5 s "
        "(gave up after 2 attempts)"
    )


def test_a_retry_wait_that_would_pass_the_deadline_is_not_taken(stub):
    waits: list[float] = []
    stub.enqueue(OPENAI_ROUTE, openai_error(503, "later", retry_after="20"), openai_text("ok"))
    client = openai(stub, sleep=waits.append, settings=HTTPSettings(deadline_s=10))
    with pytest.raises(ModelHTTPError, match=r"later$"):
        client.complete(HI)
    assert waits == []
    assert stub.pending(OPENAI_ROUTE) == 1


# -- a key echoed back, whole or in part, in any case ----------------------
@pytest.mark.parametrize(
    "echo",
    [KEY, KEY.upper(), KEY.swapcase(), KEY[:8], KEY[-4:].upper(), KEY[5:12], f"x{KEY[3:-3]}y"],
    ids=["whole", "upper", "swapped", "first 8", "last 4", "middle", "inner"],
)
def test_no_piece_of_an_echoed_key_is_shown(stub, echo):
    stub.enqueue(OPENAI_ROUTE, openai_error(401, f"Incorrect API key provided: {echo}."))
    with pytest.raises(ModelHTTPError) as caught:
        openai(stub).complete(HI)
    assert str(caught.value).endswith("Incorrect API key provided: ***.") or echo.startswith("x")
    assert_no_piece_of(KEY, str(caught.value))


def assert_no_piece_of(key: str, text: str) -> None:
    lowered, key = text.lower(), key.lower()
    for start in range(len(key) - MIN_FRAGMENT + 1):
        assert key[start : start + MIN_FRAGMENT] not in lowered
    assert key[:MIN_END] not in lowered and key[-MIN_END:] not in lowered


@given(st.data(), st.text(max_size=30), st.text(max_size=30))
def test_one_line_masks_any_long_enough_piece_of_a_key_in_any_case(data, before, after):
    start = data.draw(st.integers(0, len(KEY) - MIN_FRAGMENT))
    end = data.draw(st.integers(start + MIN_FRAGMENT, len(KEY)))
    flips = data.draw(st.lists(st.booleans(), min_size=end - start, max_size=end - start))
    pairs = zip(KEY[start:end], flips, strict=True)
    piece = "".join(char.swapcase() if flip else char for char, flip in pairs)
    shown = printable_line(f"{before}{piece}{after}", [KEY], limit=10_000)
    assert "\n" not in shown and shown.isprintable()
    assert_no_piece_of(KEY, shown)


def test_ordinary_words_that_share_a_few_letters_with_the_key_are_left_alone():
    assert printable_line("max_tokens: too large", [KEY], limit=300) == "max_tokens: too large"
