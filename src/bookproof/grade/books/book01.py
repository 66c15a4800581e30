"""Exercise Book 1: the checks for a submission's `morning_brief.py`.

The graded interface (exercises/book01/README.md):
`replenishment_need(row)`, `brief_snapshot(shop)`, `snapshot_json(shop, taken_at)`,
`build_brief_request(shop, taken_at)`, `morning_brief(model, shop, taken_at)` and
`brief_or_notice(environ, shop, taken_at)`.

Every expected value is written here: the snapshot text from `json.dumps` of
a dict this module built, the notices as literal sentences. Private fields
and their values, times and model names are random per run, so an answer
recorded from one run is useless in the next. No check needs a network: the
one "unreachable server" is a port on 127.0.0.1 this module has just closed.
"""

from __future__ import annotations

import json
import random
import socket
import string
from collections.abc import Callable, Sequence
from typing import Any

from bookproof.grade.checks import Check, Result, Trial, attrs, call, get, let, method, ref

__all__ = ["BOOK", "CHECKS", "MODULE", "REQUIRED_FILES", "TITLE", "trials"]

BOOK = 1
TITLE = "Exercise Book 1: first model call"
MODULE = "morning_brief"
REQUIRED_FILES = ("morning_brief.py",)

_CH = "Chapter 1"
S_SHOP = f"{_CH}, '1.1 The shop as data'"
S_SNAPSHOT = f"{_CH}, '1.2 The snapshot'"
S_REQUEST = f"{_CH}, '1.3 Composing the request'"
S_SENDING = f"{_CH}, '1.4 Sending it'"
S_FAILS = f"{_CH}, '1.9 When a real call fails'"
S_UNIT_A = f"{_CH}, '1.12 Exercises' (Exercise Book 1, Unit A)"
S_UNIT_B = f"{_CH}, '1.12 Exercises' (Exercise Book 1, Unit B)"

BRIEF_FIELDS = ("sku", "name", "on_hand", "reorder_point")
FUNCTIONS = (
    "replenishment_need",
    "brief_snapshot",
    "snapshot_json",
    "build_brief_request",
    "morning_brief",
    "brief_or_notice",
)

# Chapter 1's recorded reply, written out again rather than imported: the
# expected text must not come from the code a check is about.
RECORDED_BRIEF = """\
Good morning, Lucy. Here is today's brief, from the stock snapshot you sent.

Re-order today:
- Vanilla (SKU-VANILLA): 2 tubs on hand, target 8. Order 6.
- Strawberry (SKU-STRAWBERRY): 1 tub on hand, target 5. Order 4.

No order needed:
- Chocolate (SKU-CHOCOLATE): 7 tubs on hand, target 6.

These figures are only as fresh as the snapshot. If a delivery has arrived \
since it was taken, count the freezer again before you order."""

CHECKS: tuple[Check, ...] = (
    Check(
        "imports",
        1,
        "chapter 1",
        "morning_brief.py imports and defines the six functions of the exercise book.",
        "morning_brief.py must import cleanly and define: " + ", ".join(FUNCTIONS) + ".",
        S_SENDING,
    ),
    Check(
        "ch1_need",
        1,
        "chapter 1",
        "replenishment_need gives 6, 0 and 4, and 0 (never negative) above target.",
        "replenishment_need must be max(0, reorder_point - on_hand).",
        S_SHOP,
    ),
    Check(
        "ch1_offline_brief",
        1,
        "chapter 1",
        "With no SOVEREIGN_MODEL set, brief_or_notice returns the recorded offline brief.",
        "brief_or_notice({}, shop, taken_at) must return the offline model's reply text.",
        S_SENDING,
    ),
    Check(
        "ex1_fields_only",
        2,
        "exercise 1",
        "brief_snapshot keeps the shop's name and only sku, name, on_hand, reorder_point.",
        "brief_snapshot must return {'name', 'products'} with only the four brief fields per row.",
        S_UNIT_A,
    ),
    Check(
        "ex1_shop_unchanged",
        1,
        "exercise 1",
        "brief_snapshot leaves the caller's shop as it was, private fields included.",
        "brief_snapshot must build a new dict, not delete fields from the shop it was given.",
        S_UNIT_A,
    ),
    Check(
        "ex1_private_not_sent",
        2,
        "exercise 1",
        "No private field or value appears in the snapshot text or the request.",
        "snapshot_json and build_brief_request must use brief_snapshot, so private data stays.",
        S_UNIT_A,
    ),
    Check(
        "ex2_taken_at",
        2,
        "exercise 2",
        "snapshot_json adds taken_at and stays stable JSON (indent 2, sorted keys).",
        "snapshot_json must dump {**brief_snapshot(shop), 'taken_at': taken_at}, "
        "indent=2, sort_keys=True.",
        S_SNAPSHOT,
    ),
    Check(
        "ex2_request",
        1,
        "exercise 2",
        "The request is a system message naming taken_at, then the stamped snapshot.",
        "build_brief_request must send the rules (mentioning taken_at) and the stamped snapshot.",
        S_REQUEST,
    ),
    Check(
        "ex3_config_notice",
        2,
        "exercise 3",
        "A missing key or an unknown SOVEREIGN_MODEL gives a one-line 'Brief unavailable' notice.",
        "Catch ModelError in brief_or_notice and return 'Brief unavailable: ' + the message.",
        S_UNIT_B,
    ),
    Check(
        "ex3_unreachable_notice",
        2,
        "exercise 3",
        "An unreachable server gives a notice with the error and never the key.",
        "The notice must be 'Brief unavailable: ' + str(error): no key, no environment, one line.",
        S_FAILS,
    ),
    Check(
        "ex3_defects_stay_loud",
        1,
        "exercise 3",
        "A shop with no products still raises KeyError: only model errors become notices.",
        "Catch ModelError only; a KeyError from broken data must not be turned into a notice.",
        S_UNIT_B,
    ),
)


# --- helpers ---------------------------------------------------------------


def _token(rng: random.Random, n: int = 8) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _rows() -> list[dict[str, Any]]:
    return [
        {"sku": "SKU-VANILLA", "name": "Vanilla", "on_hand": 2, "reorder_point": 8},
        {"sku": "SKU-CHOCOLATE", "name": "Chocolate", "on_hand": 7, "reorder_point": 6},
        {"sku": "SKU-STRAWBERRY", "name": "Strawberry", "on_hand": 1, "reorder_point": 5},
    ]


def _shop(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "Lucy's Ice Cream", "products": rows}


def _private_shop(rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    """Chapter 1's shop with private fields added; also the strings that must never be sent."""
    # Field names and notes only: a margin's digits could also be part of a date.
    secrets: list[str] = ["margin_pence"]
    rows = _rows()
    for row in rows:
        note = "secret-token-" + _token(rng, 10)
        field = "note_" + _token(rng, 5)
        row["margin_pence"] = rng.randint(1000, 9999)
        row[field] = note
        secrets += [note, field]
    rng.shuffle(rows)
    shop = _shop(rows)
    shop["owner_phone_" + _token(rng, 4)] = "secret-token-" + _token(rng, 10)
    secrets += [key for key in shop if key.startswith("owner_phone_")]
    secrets += [shop[key] for key in shop if key.startswith("owner_phone_")]
    return shop, secrets


def _minimal(shop: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": shop["name"],
        "products": [{field: row[field] for field in BRIEF_FIELDS} for row in shop["products"]],
    }


def _stamped_text(shop: dict[str, Any], taken_at: str) -> str:
    return json.dumps({**_minimal(shop), "taken_at": taken_at}, indent=2, sort_keys=True)


def _taken_at(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T07:{rng.randint(0, 59):02d}"


def _closed_port() -> int:
    # Bind, read the number, close: nothing listens there, so a connection is refused.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _returned(result: Result) -> bool:
    return result.status == "returned"


def _when(condition: bool, reason: str) -> str | None:
    return None if condition else reason


# --- the trials ------------------------------------------------------------


def trials(rng: random.Random) -> dict[str, Trial]:
    """One trial per check, with fresh random data for this run."""
    builders: dict[str, Callable[[random.Random], Trial]] = {
        "imports": _imports,
        "ch1_need": _ch1_need,
        "ch1_offline_brief": _ch1_offline_brief,
        "ex1_fields_only": _ex1_fields_only,
        "ex1_shop_unchanged": _ex1_shop_unchanged,
        "ex1_private_not_sent": _ex1_private_not_sent,
        "ex2_taken_at": _ex2_taken_at,
        "ex2_request": _ex2_request,
        "ex3_config_notice": _ex3_config_notice,
        "ex3_unreachable_notice": _ex3_unreachable_notice,
        "ex3_defects_stay_loud": _ex3_defects_stay_loud,
    }
    return {check.id: builders[check.id](rng) for check in CHECKS}


def _imports(rng: random.Random) -> Trial:
    def judge(results: Sequence[Result]) -> str | None:
        (found,) = results
        expected = dict.fromkeys(FUNCTIONS, True)
        return _when(
            _returned(found) and found.value == expected, "A required function is missing."
        )

    return Trial((attrs(*FUNCTIONS),), judge)


def _ch1_need(rng: random.Random) -> Trial:
    above = {"sku": "SKU-X", "name": "X", "on_hand": rng.randint(20, 40), "reorder_point": 10}
    below = {"sku": "SKU-Y", "name": "Y", "on_hand": 3, "reorder_point": rng.randint(4, 30)}
    expected = [6, 0, 4, 0, below["reorder_point"] - 3]

    def judge(results: Sequence[Result]) -> str | None:
        got = [r.value if _returned(r) else None for r in results]
        if got[:3] != [6, 0, 4]:
            return "Expected needs of 6 (vanilla), 0 (chocolate) and 4 (strawberry)."
        return _when(got == expected, "A flavour above its target must need 0, never less.")

    rows = [*_rows(), above, below]
    return Trial(tuple(call("replenishment_need", row) for row in rows), judge)


def _ch1_offline_brief(rng: random.Random) -> Trial:
    def judge(results: Sequence[Result]) -> str | None:
        (brief,) = results
        return _when(
            _returned(brief) and brief.value == RECORDED_BRIEF,
            "Offline, the brief should be the recorded reply, unchanged.",
        )

    return Trial((call("brief_or_notice", {}, _shop(_rows()), _taken_at(rng)),), judge)


def _ex1_fields_only(rng: random.Random) -> Trial:
    shop, _ = _private_shop(rng)
    expected = _minimal(shop)

    def judge(results: Sequence[Result]) -> str | None:
        (snapshot,) = results
        if not _returned(snapshot) or not isinstance(snapshot.value, dict):
            return "brief_snapshot should return a plain dict."
        return _when(
            snapshot.value == expected,
            "The snapshot should hold the name and, per product in order, only the 4 fields.",
        )

    return Trial((call("brief_snapshot", shop),), judge)


def _ex1_shop_unchanged(rng: random.Random) -> Trial:
    shop, _ = _private_shop(rng)
    original = json.loads(json.dumps(shop))

    def judge(results: Sequence[Result]) -> str | None:
        _, _, after = results
        return _when(
            _returned(after) and after.value == original,
            "brief_snapshot changed the shop it was given.",
        )

    return Trial(
        (let("shop", shop), call("brief_snapshot", ref("shop"), save="snapshot"), get("shop")),
        judge,
    )


def _ex1_private_not_sent(rng: random.Random) -> Trial:
    shop, secrets = _private_shop(rng)
    taken_at = _taken_at(rng)

    def judge(results: Sequence[Result]) -> str | None:
        text, _, _, system, _, user = results
        if not all(_returned(r) and isinstance(r.value, (str, dict)) for r in (text, system, user)):
            return "snapshot_json should return text and the request two messages."
        sent = json.dumps([text.value, system.value, user.value])
        return _when(
            not any(secret in sent for secret in secrets),
            "A private field or value reached the text sent to the model.",
        )

    return Trial(
        (
            call("snapshot_json", shop, taken_at),
            call("build_brief_request", shop, taken_at, save="request"),
            # Each message's own fields, as plain data: what the client would send.
            *_message_dumps("request"),
        ),
        judge,
    )


def _message_dumps(name: str) -> tuple[Any, ...]:
    return (
        method(name, "__getitem__", 0, save=f"{name}_0"),
        method(f"{name}_0", "model_dump"),
        method(name, "__getitem__", 1, save=f"{name}_1"),
        method(f"{name}_1", "model_dump"),
    )


def _ex2_taken_at(rng: random.Random) -> Trial:
    shop, _ = _private_shop(rng)
    plain = _shop(_rows())
    first, second = _taken_at(rng), _taken_at(rng)
    expected = [_stamped_text(shop, first), _stamped_text(plain, second)]

    def judge(results: Sequence[Result]) -> str | None:
        got = [r.value if _returned(r) else None for r in results]
        if not all(isinstance(text, str) for text in got):
            return "snapshot_json should return text."
        parsed = []
        for text in got:
            try:
                parsed.append(json.loads(text))
            except ValueError:
                return "snapshot_json should return JSON text."
        if [p.get("taken_at") if isinstance(p, dict) else None for p in parsed] != [
            first,
            second,
        ]:
            return "The JSON should have a top-level taken_at holding the time given."
        return _when(got == expected, "Keep indent=2 and sort_keys=True: stable text every run.")

    return Trial((call("snapshot_json", shop, first), call("snapshot_json", plain, second)), judge)


def _ex2_request(rng: random.Random) -> Trial:
    shop = _shop(_rows())
    taken_at = _taken_at(rng)
    snapshot = _stamped_text(shop, taken_at)

    def judge(results: Sequence[Result]) -> str | None:
        _, length, _, system, _, user = results
        if not (_returned(length) and length.value == 2):
            return "The request should hold exactly two messages."
        if not (_returned(system) and _returned(user)):
            return "The request's messages should be SystemMessage and UserMessage."
        if system.value.get("role") != "system" or user.value.get("role") != "user":
            return "The first message should be the system rules, the second the user's data."
        if "taken_at" not in str(system.value.get("content")):
            return "The system message should tell the model what taken_at means."
        return _when(
            snapshot in str(user.value.get("content")),
            "The user message should carry snapshot_json(shop, taken_at) unchanged.",
        )

    dumps = _message_dumps("request")
    return Trial(
        (
            call("build_brief_request", shop, taken_at, save="request"),
            method("request", "__len__"),
            *dumps,
        ),
        judge,
    )


def _ex3_config_notice(rng: random.Random) -> Trial:
    unknown = f"gemini:{_token(rng, 6)}"
    expected = [
        "Brief unavailable: OPENAI_API_KEY is not set; api.openai.com needs a key "
        "(or use SOVEREIGN_MODEL=offline)",
        "Brief unavailable: ANTHROPIC_API_KEY is not set; the Anthropic API needs a key "
        "(or use SOVEREIGN_MODEL=offline)",
        f"Brief unavailable: SOVEREIGN_MODEL='{unknown}' is not one of: "
        "offline, openai:<model>, anthropic:<model>",
    ]
    environments = [
        {"SOVEREIGN_MODEL": "openai:gpt-4o-mini"},
        {"SOVEREIGN_MODEL": f"anthropic:claude-{_token(rng, 4)}"},
        {"SOVEREIGN_MODEL": unknown},
    ]

    def judge(results: Sequence[Result]) -> str | None:
        if any(r.status == "raised" for r in results):
            return "brief_or_notice raised instead of returning a notice."
        return _when(
            [r.value for r in results] == expected,
            "Expected exactly 'Brief unavailable: ' followed by the error's one-line message.",
        )

    shop, taken_at = _shop(_rows()), _taken_at(rng)
    return Trial(
        tuple(call("brief_or_notice", env, shop, taken_at, may_raise=True) for env in environments),
        judge,
    )


def _ex3_unreachable_notice(rng: random.Random) -> Trial:
    port = _closed_port()
    key = "secret-token-" + _token(rng, 16)
    model = f"llama-{_token(rng, 4)}"
    environ = {
        "SOVEREIGN_MODEL": f"openai:{model}",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": key,
    }
    expected = (
        f"Brief unavailable: cannot reach http://127.0.0.1:{port}/v1/chat/completions: "
        "connection refused"
    )

    def judge(results: Sequence[Result]) -> str | None:
        (notice,) = results
        if notice.status == "raised":
            return "brief_or_notice raised instead of returning a notice."
        if not _returned(notice) or not isinstance(notice.value, str):
            return "brief_or_notice should return text."
        if key in notice.value:
            return "The notice contains the API key: show the error's message only."
        return _when(notice.value == expected, "Expected 'Brief unavailable: ' + str(error).")

    return Trial(
        (call("brief_or_notice", environ, _shop(_rows()), _taken_at(rng), may_raise=True),),
        judge,
    )


def _ex3_defects_stay_loud(rng: random.Random) -> Trial:
    def judge(results: Sequence[Result]) -> str | None:
        (result,) = results
        return _when(
            result.status == "raised" and "KeyError" in result.raised,
            "A shop with no products must raise KeyError, not become a notice.",
        )

    broken = {"name": "Lucy's Ice Cream"}
    return Trial(
        (call("brief_or_notice", {}, broken, _taken_at(rng), may_raise=True),),
        judge,
    )
