"""Finding the book's own cross-references in prose: "chapter 3", "section 2.8", "Listing 2.7".

Chapters already refer to each other in plain words. Those words follow a
pattern precise enough to link without any markup of their own:

- ``chapter N`` / ``chapters N and M``: a chapter of the manifest;
- ``section N.M`` / ``sections N.M to N.K``: a chapter's heading that starts
  with ``N.M``; ``section N`` is a heading ``N. ...`` of the same page (the
  exercise units number their sections that way);
- ``Listing N.K``: the K-th verified listing of chapter N, as the site numbers them;
- ``Figure N.K``: the figure whose caption starts "Figure N.K:";
- ``Exercise Book N``: the exercise book of chapter N.

The noun may be capitalised or plural; numbers after the first may follow a
comma, "and", "or" or "to". Each number becomes a mention of its own, so
"sections 2.4 to 2.9" links both sections. A number of the wrong shape for
its noun ("chapter 2.8", "Listing 3") is returned too, marked `malformed`, so
the build can say so instead of silently leaving the words unlinked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Mention", "MentionKind", "find_mentions"]

MentionKind = Literal["chapter", "section", "listing", "figure", "exercise-book"]

_NUMBER = r"\d+(?:\.\d+)?(?!\.?\d)"
_SEPARATOR = r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|to)\s+)"
_MENTION = re.compile(
    rf"\b(?P<noun>chapters?|sections?|listings?|figures?|exercise\s+books?)\s+"
    rf"(?P<numbers>{_NUMBER}(?:{_SEPARATOR}{_NUMBER})*)",
    re.IGNORECASE,
)
_EACH_NUMBER = re.compile(_NUMBER)

_KINDS: dict[str, MentionKind] = {
    "chapter": "chapter",
    "section": "section",
    "listing": "listing",
    "figure": "figure",
    "exercise book": "exercise-book",
}
# Chapters and exercise books are numbered N, listings N.M, sections either.
_DOTTED: dict[MentionKind, bool | None] = {
    "chapter": False,
    "exercise-book": False,
    "section": None,
    "listing": True,
    "figure": True,
}


@dataclass(frozen=True)
class Mention:
    """One reference found in a text: `text[start:end]` is what becomes the link."""

    start: int
    end: int
    kind: MentionKind
    key: str  # "3" for a chapter or exercise book, "2.8" for a listing, either for a section
    malformed: bool = False  # the number's shape does not fit the noun


def _kind(noun: str) -> MentionKind:
    words = " ".join(noun.lower().split()).removesuffix("s")
    return _KINDS[words]


def find_mentions(text: str) -> list[Mention]:
    """Every mention in `text`, in order; spans never overlap.

    The first number's link covers its noun too ("section 2.8"); later numbers
    link alone ("sections 2.4 to [2.9]"), so the prose reads unchanged.
    """
    mentions: list[Mention] = []
    for match in _MENTION.finditer(text):
        kind = _kind(match.group("noun"))
        numbers_start = match.start("numbers")
        for index, number in enumerate(_EACH_NUMBER.finditer(match.group("numbers"))):
            key = number.group()
            dotted = _DOTTED[kind]
            start = match.start() if index == 0 else numbers_start + number.start()
            mentions.append(
                Mention(
                    start=start,
                    end=numbers_start + number.end(),
                    kind=kind,
                    key=key,
                    malformed=dotted is not None and ("." in key) != dotted,
                )
            )
    return mentions
