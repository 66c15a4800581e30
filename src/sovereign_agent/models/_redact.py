"""Text from a server, made fit to show a reader: one printable line, no piece of a key.

A server may echo the key it was sent ("invalid key sk-..."), whole, cut short
or in another case; an error message may carry a lone surrogate that no
terminal can print, or escape sequences that rewrite the reader's screen. None
of that reaches a message.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MASK", "MIN_END", "MIN_FRAGMENT", "printable_line", "redact"]

MASK = "***"
# A run of this many characters of a key is masked wherever it appears. Shorter
# runs are ordinary text ("token", "-api") and masking them would garble
# messages; six or more from a key are not text.
MIN_FRAGMENT = 6
# A key's first and last characters are what servers echo as a hint ("sk-...a1b2"),
# so its ends are masked from this length on.
MIN_END = 4

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _pieces(key: str) -> list[tuple[int, set[str]]]:
    """The runs of `key` to mask, grouped by length: every window, and its two ends."""
    if len(key) <= MIN_FRAGMENT:
        return [(len(key), {key})] if key else []
    windows = {key[i : i + MIN_FRAGMENT] for i in range(len(key) - MIN_FRAGMENT + 1)}
    return [(MIN_FRAGMENT, windows), (MIN_END, {key[:MIN_END], key[-MIN_END:]})]


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every piece of a secret masked: any run of `MIN_FRAGMENT` or more
    of its characters, and its first or last `MIN_END` characters.

    Compared without regard to ASCII case (keys are ASCII, `read_api_key`
    makes sure). Every window of the text that is such a piece is hidden, so
    longer, overlapping and adjacent pieces merge into one mask.
    """
    # Lower-casing ASCII only keeps every index of `lowered` aligned with `text`.
    lowered = text.translate(_ASCII_LOWER)
    hidden = [False] * len(text)
    for secret in secrets:
        for size, pieces in _pieces(secret.translate(_ASCII_LOWER)):
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
