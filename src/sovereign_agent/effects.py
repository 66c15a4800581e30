"""Printed in chapter 10: what a tool can do to the world, in five classes.

Chapter 2 split tools in two: consequential or not. That one boolean answers
one question, whether a call needs somebody's authority before it runs, and
chapters 8 to 10 ask more than one: what may a run keep once it has read
untrusted text, which calls need an approval, which send the shop's data out.
Each tool therefore declares its **effect classes**, one or several:

- `read`: reads the shop's own data and changes nothing;
- `write`: changes the shop's own records (a draft), spending nothing;
- `money`: commits the shop to paying;
- `egress`: sends something out of the shop (a remote server hears the arguments);
- `code`: runs code that was not in the shop's source.

Every policy after chapter 8 is a rule over these sets, written once here;
chapter 2's boolean is worked out from them (`NEEDS_AUTHORITY`), so a tool
declared the chapter 2 way still works, and `classes_of_consequential` says
exactly what such a declaration stands for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Protocol

__all__ = [
    "CONSEQUENTIAL",
    "NEEDS_APPROVAL",
    "NEEDS_AUTHORITY",
    "NOT_CONSEQUENTIAL",
    "UNTRUSTED_TEXT_KEEPS",
    "Classed",
    "Effect",
    "classes_of_consequential",
    "kept_after_untrusted_text",
    "needs_authority",
]


class Effect(StrEnum):
    """One thing a call can do to the world."""

    READ = "read"
    WRITE = "write"
    MONEY = "money"
    EGRESS = "egress"
    CODE = "code"


# What chapter 2's `consequential=False` stands for: a tool that only reads.
NOT_CONSEQUENTIAL = frozenset({Effect.READ})
# What `consequential=True` stands for when a tool says nothing more: every
# class beyond reading. Nobody said which, so every policy treats it as the
# worst of them: approvals ask for it, untrusted text removes it.
CONSEQUENTIAL = frozenset({Effect.WRITE, Effect.MONEY, Effect.EGRESS, Effect.CODE})
# The classes for which a call needs the dispatcher's write authority
# (chapter 2's step 3): spending and running code. Writing the shop's own
# records and asking a remote server a question do not; other rules hold those.
NEEDS_AUTHORITY = frozenset({Effect.MONEY, Effect.CODE})
# The classes an approval must cover (chapter 10): every call that can spend.
NEEDS_APPROVAL = frozenset({Effect.MONEY})
# All a run keeps once it has read untrusted text (chapter 8): reading.
UNTRUSTED_TEXT_KEEPS = frozenset({Effect.READ})


class Classed(Protocol):
    """Anything that declares what it can do: an `ExecutableTool`."""

    @property
    def effects(self) -> frozenset[Effect]: ...


def classes_of_consequential(consequential: bool) -> frozenset[Effect]:
    """The classes a tool declared only with chapter 2's boolean stands for."""
    return CONSEQUENTIAL if consequential else NOT_CONSEQUENTIAL


def needs_authority(classes: Iterable[Effect]) -> bool:
    """Chapter 2's boolean, worked out from the classes: can the call spend, or run code?"""
    return not NEEDS_AUTHORITY.isdisjoint(classes)


def kept_after_untrusted_text(tools: Mapping[str, Classed]) -> frozenset[str]:
    """The names a run keeps once it has read untrusted text: the tools declared to only read.

    Worked out from the classes, not listed by name, so a tool added later is
    kept or removed by what it declares. Only a declaration counts: a tool
    that declares no classes is removed, whatever its boolean says, as
    chapter 8's list removed every tool it did not name.
    """
    return frozenset(
        name
        for name, tool in tools.items()
        if tool.effects and tool.effects <= UNTRUSTED_TEXT_KEEPS
    )
