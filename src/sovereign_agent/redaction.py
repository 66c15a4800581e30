"""Support the book does not print: the one rule for keeping a key out of what we show and write.

A provider may echo the key it was sent ("invalid key sk-..."), whole, cut
short or in another case; a careless tool may put one in its error; an
operator may paste one into a task. The model clients (an error message for a
reader) and the trace recorder (a line in a file) hide the same pieces of a
key, by this module's rule:

- every run of `MIN_FRAGMENT` characters of the key, and its first and last
  `MIN_END` characters, which servers echo to identify a key ("sk-...a1b2");
  a key no longer than `MIN_FRAGMENT` is hidden whole;
- compared without regard to ASCII letter case (keys are ASCII; a server that
  upper-cases what it echoes still echoes the key);
- overlapping and touching pieces are hidden as one `MASK`, and the result is
  searched again, so a mask beside a character of the text never spells a piece.

Almost every text holds no piece at all, so each is first searched for all of
the pieces at once (`piece_search`), and only a text that holds one is masked
piece by piece.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable

import pydantic_core
from pydantic_core import core_schema

__all__ = [
    "MASK",
    "MIN_END",
    "MIN_FRAGMENT",
    "piece_search",
    "printable_line",
    "redact",
    "utf8_piece_search",
]

MASK = "***"
# A run of this many characters of a key is masked wherever it appears. Shorter
# runs are ordinary text ("token", "-api") and masking them would garble
# messages; six or more from a key are not text.
MIN_FRAGMENT = 6
# A key's first and last characters are what servers echo as a hint ("sk-...a1b2"),
# so its ends are masked from this length on.
MIN_END = 4

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold_case(text: str) -> str:
    """`text` with ASCII letters in lower case: every index still points at the same character."""
    return text.translate(_ASCII_LOWER)


@functools.lru_cache(maxsize=64)
def secret_pieces(secret: str) -> frozenset[str]:
    """Every piece of `secret` the rule hides, case folded: its windows and its two ends."""
    key = fold_case(secret)
    if len(key) <= MIN_FRAGMENT:
        return frozenset({key}) if key else frozenset()
    windows = {key[i : i + MIN_FRAGMENT] for i in range(len(key) - MIN_FRAGMENT + 1)}
    return frozenset(windows | {key[:MIN_END], key[-MIN_END:]})


# A lone surrogate (from an undecodable byte of the environment, or a provider's
# text) cannot be handed to the compiled search; each one, in a piece and in a
# text alike, is searched for as U+FFFD instead. That can only find more.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _regex_literal(piece: str) -> str:
    # Every character but an ASCII letter or digit written as its code point:
    # no character of a key can then be read as syntax by the regex engine.
    return "".join(
        char if char.isascii() and char.isalnum() else f"\\x{{{ord(char):x}}}"
        for char in _SURROGATE.sub("\ufffd", piece)
    )


@functools.lru_cache(maxsize=64)
def piece_search(pieces: frozenset[str]) -> Callable[[str], bool]:
    """A test of whether a text holds any of `pieces`: true wherever `piece in text` is for one.

    (Where a piece or the text holds a lone surrogate it may also answer true
    for a text that holds U+FFFD there: a search that says yes only sends the
    text to be masked piece by piece, which finds what is really there.)

    One pass over the text for all of them: the pieces, an alternation of
    literals, are compiled once by the Rust regex engine Pydantic carries
    (its `pattern` constraint, which searches anywhere in the text), which
    looks for many strings at once. Looking for each piece in turn, as `in`
    does, read the text once per piece: a 56-character key has 53 pieces.
    Should the engine refuse the pattern (a key of many thousands of
    characters), each piece is looked for in turn.
    """
    matches = _compiled_search(pieces)

    def holds(text: str) -> bool:
        if not text.isascii():
            text = _SURROGATE.sub("\ufffd", text)
        return matches(text)

    return holds


@functools.lru_cache(maxsize=64)
def utf8_piece_search(pieces: frozenset[str]) -> Callable[[str], bool]:
    """`piece_search`, for text known to hold no lone surrogate (text UTF-8 could encode).

    The compiled search itself, without the pass that first replaces lone
    surrogates: for such text that pass changes nothing, and costs as much
    again as the search. Handed a lone surrogate, it may answer no wrongly:
    such text goes to `piece_search`.
    """
    return _compiled_search(pieces)


def _compiled_search(pieces: frozenset[str]) -> Callable[[str], bool]:
    ordered = sorted(pieces)
    if not ordered:
        return lambda text: False
    pattern = "(?:" + "|".join(_regex_literal(piece) for piece in ordered) + ")"
    try:
        validator = pydantic_core.SchemaValidator(
            core_schema.str_schema(pattern=pattern, regex_engine="rust-regex", strict=True)
        )
    except pydantic_core.SchemaError:
        return lambda text: any(piece in text for piece in ordered)
    return validator.isinstance_python


def _mask_once(text: str, pieces: frozenset[str]) -> str:
    lowered = fold_case(text)
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


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every piece of every secret masked (see the module's rule)."""
    pieces = frozenset().union(*(secret_pieces(secret) for secret in secrets))
    if not pieces or not piece_search(pieces)(fold_case(text)):
        # No piece in the text: masking would find nothing and return it as it is.
        return text
    while True:
        masked = _mask_once(text, pieces)
        # Again while masking shortens the text: a mask next to a star of the
        # text can spell a piece of a key holding stars. A key of three
        # characters or fewer is masked once, as a mask could spell it forever.
        if masked == text or len(masked) >= len(text):
            return masked
        text = masked


def printable_line(text: str, secrets: Iterable[str], *, limit: int) -> str:
    """Printable, on one line, redacted, at most `limit` characters.

    Lone surrogates and control characters become U+FFFD: printing them would
    raise `UnicodeEncodeError` or let a server write escape codes to the
    reader's terminal. Masking comes before the cut, so no cut can leave a
    longer piece of a key unmasked.
    """
    text = " ".join(
        "".join(char if char.isprintable() else "\ufffd" for char in word) for word in text.split()
    )
    text = redact(text, secrets)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text
