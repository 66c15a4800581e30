"""Exercise 3 (Unit B): a failed model call is a one-line notice; a bug stays loud."""

from __future__ import annotations

import socket

import pytest
from morning_brief import SHOP, brief_or_notice

KEY = "secret-token-never-show-me"


def test_offline_the_notice_function_returns_the_brief() -> None:
    brief = brief_or_notice({}, SHOP, "2026-06-01T07:30")
    assert brief.startswith("Good morning, Lucy.")


def test_a_missing_key_becomes_one_line() -> None:
    notice = brief_or_notice({"SOVEREIGN_MODEL": "openai:gpt-4o-mini"}, SHOP, "07:30")
    assert notice == (
        "Brief unavailable: OPENAI_API_KEY is not set; api.openai.com needs a key "
        "(or use SOVEREIGN_MODEL=offline)"
    )


def test_an_unreachable_server_becomes_one_line_without_the_key() -> None:
    with socket.socket() as sock:  # a port nothing listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    environ = {
        "SOVEREIGN_MODEL": "openai:llama3.2",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": KEY,
    }
    notice = brief_or_notice(environ, SHOP, "07:30")
    assert notice == (
        f"Brief unavailable: cannot reach http://127.0.0.1:{port}/v1/chat/completions: "
        "connection refused"
    )
    assert KEY not in notice


def test_a_shop_without_products_is_a_bug_and_still_raises() -> None:
    with pytest.raises(KeyError):
        brief_or_notice({}, {"name": "Lucy's Ice Cream"}, "07:30")
