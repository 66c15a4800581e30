"""The one-pass search for a key's pieces masks exactly what the piece-by-piece rule masked.

`redact` and the recorder's `holds_secret` now look for every piece of a key
at once (`piece_search`, a compiled alternation) before masking anything. The
rule they apply did not change, so the rule as it was written before the
search is kept here, whole, as the reference: for any secrets and any text
(other letter cases, overlapping and touching pieces, stars, text beyond
ASCII, lone surrogates, characters the regex engine reads as syntax), the
masking with the search gives the reference's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strength import examples

from sovereign_agent import redaction
from sovereign_agent.redaction import MASK, MIN_END, MIN_FRAGMENT, piece_search, redact
from sovereign_agent.trace.recorder import encode_event, holds_secret

# --- The rule as it was before the one-pass search, kept as the reference ---


def reference_fold(text: str) -> str:
    return "".join(chr(ord(char) + 32) if "A" <= char <= "Z" else char for char in text)


def reference_pieces(secret: str) -> frozenset[str]:
    key = reference_fold(secret)
    if len(key) <= MIN_FRAGMENT:
        return frozenset({key}) if key else frozenset()
    windows = {key[i : i + MIN_FRAGMENT] for i in range(len(key) - MIN_FRAGMENT + 1)}
    return frozenset(windows | {key[:MIN_END], key[-MIN_END:]})


def reference_mask_once(text: str, pieces: frozenset[str]) -> str:
    lowered = reference_fold(text)
    hidden = [False] * len(text)
    for size in sorted({len(piece) for piece in pieces}):
        for start in range(len(lowered) - size + 1):
            if lowered[start : start + size] in pieces:
                hidden[start : start + size] = [True] * size
    if not any(hidden):
        return text
    kept: list[str] = []
    for position, char in enumerate(text):
        if not hidden[position]:
            kept.append(char)
        elif position == 0 or not hidden[position - 1]:
            kept.append(MASK)
    return "".join(kept)


def reference_redact(text: str, secrets: Iterable[str]) -> str:
    pieces = frozenset().union(*(reference_pieces(secret) for secret in secrets))
    if not pieces:
        return text
    while True:
        masked = reference_mask_once(text, pieces)
        if masked == text or len(masked) >= len(text):
            return masked
        text = masked


# --- Secrets and texts ---

# Letters in both cases, stars (a mask can spell a piece of a key that holds
# them), characters the regex engine reads as syntax, text beyond ASCII and the
# Basic Multilingual Plane, U+FFFD and lone surrogates (searched for as U+FFFD).
CHARACTERS = st.one_of(
    st.sampled_from('aAbBzZ09*-_.|()[]{}?+^$\\#&~ \t\n"é€😀\ufffd\udc80\ud800'),
    st.characters(),
)
SECRETS = st.lists(st.text(CHARACTERS, min_size=1, max_size=24), min_size=1, max_size=3)


@st.composite
def texts_quoting(draw: st.DrawFn, secrets: list[str]) -> str:
    """Random text and pieces of the secrets, cut anywhere, in any case, overlapping or touching."""
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.integers(0, 4))
        if choice == 0:
            parts.append(draw(st.text(CHARACTERS, max_size=8)))
        elif choice == 1:
            parts.append(MASK[: draw(st.integers(1, len(MASK)))])
        elif choice == 2:
            # What the compiled search cannot be handed as it is, and what it looks for instead.
            parts.append(draw(st.sampled_from(["\udc80", "\ud800", "\ufffd"])))
        else:
            secret = draw(st.sampled_from(secrets))
            start = draw(st.integers(0, len(secret)))
            length = draw(st.integers(MIN_END - 1, MIN_FRAGMENT + 2) | st.integers(0, len(secret)))
            piece = secret[start : start + length]
            flip = draw(st.sampled_from(["keep", "swap", "upper", "lower"]))
            parts.append(
                {
                    "keep": piece,
                    "swap": piece.swapcase(),
                    "upper": piece.upper(),
                    "lower": piece.lower(),
                }[flip]
            )
    return "".join(parts)


@settings(max_examples=examples(600), deadline=None)
@given(data=st.data(), secrets=SECRETS)
def test_masking_with_the_search_gives_the_reference_text(
    data: st.DataObject, secrets: list[str]
) -> None:
    text = data.draw(texts_quoting(secrets))
    assert redact(text, secrets) == reference_redact(text, secrets)


@settings(max_examples=examples(400), deadline=None)
@given(data=st.data(), secrets=SECRETS)
def test_the_search_finds_a_piece_wherever_one_is(data: st.DataObject, secrets: list[str]) -> None:
    pieces = frozenset().union(*(reference_pieces(secret) for secret in secrets))
    text = reference_fold(data.draw(texts_quoting(secrets)))
    plain = any(piece in text for piece in pieces)
    found = piece_search(pieces)(text)
    surrogates = any("\ud800" <= char <= "\udfff" for char in text + "".join(pieces))
    if surrogates:
        # A lone surrogate is looked for as U+FFFD: the search may say yes more often, never less.
        assert found or not plain
    else:
        assert found == plain


def test_a_lone_surrogate_in_the_text_hides_no_key_beside_it() -> None:
    # Lone surrogates reach the rule from undecodable bytes of the environment
    # and from a provider's text; the compiled search cannot read them as they are.
    secret = "secret-token-5f0e2b9c"
    for text in (f"x {secret} \udc80", f"\ud800{secret.upper()}", f"{secret}\udfff\ufffd"):
        assert secret[2:8] not in redact(text, [secret]).lower()
        assert redact(text, [secret]) == reference_redact(text, [secret])


@pytest.mark.parametrize(
    "secret",
    [".*.*.*.*", "(a|b)(c|d)", "[^x]{3,}zz", "\\d\\d\\d\\d", "$^$^$^$^", "a\\x{61}bcd"],
)
def test_a_key_made_of_regex_syntax_is_looked_for_as_its_characters(secret: str) -> None:
    # Read as a pattern, each of these would match text that holds none of its characters in a row.
    search = piece_search(reference_pieces(secret))
    assert not search("abcd 1234 xyz ababcd aaaa".lower())
    assert search(reference_fold(f"quoted: {secret} here"))
    assert redact(f"echo {secret.upper()}!", [secret]) == f"echo {MASK}!"


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data(), secrets=SECRETS, standard=st.booleans())
def test_a_line_holds_a_secret_when_the_reference_would_mask_its_text(
    data: st.DataObject, secrets: list[str], standard: bool
) -> None:
    secrets = [secret for secret in secrets if secret.strip()] or ["secret-token-fallback"]
    text = data.draw(texts_quoting(secrets))
    event = {"event": "model_reply", "content": text}
    try:
        line = (
            json.dumps(event, separators=(",", ":")).encode("ascii")
            if standard
            else encode_event(event)
        )
    except pydantic_core.PydanticSerializationError:  # pragma: no cover - encode_event falls back
        return
    if reference_redact(text, secrets) != text:
        assert holds_secret(line, secrets)


def test_without_the_compiled_search_each_piece_is_looked_for_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An engine that refuses the pattern (a key of many thousands of characters
    # could be one): the search falls back to `in`, and still finds every piece.
    def refuse(schema: object) -> object:
        raise pydantic_core.SchemaError("pattern too large")

    redaction.piece_search.cache_clear()
    monkeypatch.setattr(redaction.pydantic_core, "SchemaValidator", refuse)
    try:
        secret = "secret-token-9d8c7b6a5f4e3d2c"
        search = piece_search(reference_pieces(secret))
        assert search("…token-9d8c7…")
        assert not search("nothing of it here")
        assert redact(f"key {secret.upper()} sent", [secret]) == f"key {MASK} sent"
    finally:
        redaction.piece_search.cache_clear()


def test_a_line_that_is_not_utf8_is_still_searched_for_every_piece() -> None:
    # Neither encoder writes such a line; one handed in from elsewhere is looked
    # at byte by byte rather than passed as clean.
    secret = "secret-token-9d8c7b6a5f4e3d2c"
    assert holds_secret(b'{"content":"\xff' + secret[5:11].upper().encode() + b'"}\n', [secret])
    assert not holds_secret(b'{"content":"\xff nothing of it"}\n', [secret])
