"""The strict encoder the harness uses, and the strict decoder the grader uses.

Both sides of the result channel distrust what they carry. The encoder runs
in the child, next to a submission that may have replaced builtins: it was
built from references captured when this module was imported (before any
submission), accepts only *exact* builtin types (`type(x) is dict`, never a
subclass, never an object whose `__eq__` says yes to everything) and writes
the JSON text itself, so a patched `json.dumps` changes nothing. The decoder
runs in the grader and re-validates everything anyway.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["LIMITS", "FrameError", "decode_json", "make_encoder"]

# Bounds on one encoded value: deep or huge returns are not plain answers.
LIMITS = {"depth": 64, "nodes": 200_000, "chars": 4_000_000, "int_digits": 30}


def make_encoder() -> Callable[[Any], str | None]:
    """An encoder whose every helper is bound now, in this closure.

    Returns JSON text for a value made only of exact dict (str keys), list,
    tuple, str, int, bool, finite float and None, within `LIMITS`; returns
    None for anything else (the caller reports that as a wrong type).
    """
    _type = type
    _len = len
    _str, _int, _float, _bool, _list, _tuple, _dict = str, int, float, bool, list, tuple, dict
    _none = type(None)
    _escape = json.encoder.encode_basestring_ascii  # the C function, captured by identity
    _int_repr = int.__repr__
    _float_repr = float.__repr__
    _isfinite = math.isfinite
    _dict_items = dict.items
    _append = list.append
    _pop = list.pop
    _join = "".join
    _range = range
    _int_limit = 10 ** LIMITS["int_digits"]
    max_depth, max_nodes, max_chars = LIMITS["depth"], LIMITS["nodes"], LIMITS["chars"]
    _TEXT = object()  # marks a literal piece of output on the work stack

    def encode(value: Any) -> str | None:
        out: list[str] = []
        size = 0
        nodes = 0
        # An explicit stack, so a deep value hits our bound, not the interpreter's.
        stack: list[tuple[Any, Any, int]] = [(None, value, 0)]
        while stack:
            marker, item, depth = _pop(stack)
            if marker is _TEXT:
                _append(out, item)
                size += _len(item)
                continue
            nodes += 1
            if nodes > max_nodes or depth > max_depth or size > max_chars:
                return None
            kind = _type(item)
            if kind is _none:
                piece = "null"
            elif kind is _bool:
                piece = "true" if item else "false"
            elif kind is _int:
                if not -_int_limit < item < _int_limit:
                    return None
                piece = _int_repr(item)
            elif kind is _float:
                if not _isfinite(item):
                    return None
                piece = _float_repr(item)
            elif kind is _str:
                if _len(item) > max_chars:
                    return None
                piece = _escape(item)
            elif kind is _list or kind is _tuple:
                _append(out, "[")
                pending: list[tuple[Any, Any, int]] = [(_TEXT, "]", 0)]
                for index in _range(_len(item) - 1, -1, -1):
                    _append(pending, (None, item[index], depth + 1))
                    if index:
                        _append(pending, (_TEXT, ",", 0))
                stack += pending
                continue
            elif kind is _dict:
                entries = _list(_dict_items(item))
                _append(out, "{")
                pending = [(_TEXT, "}", 0)]
                for index in _range(_len(entries) - 1, -1, -1):
                    key, child = entries[index]
                    if _type(key) is not _str:
                        return None
                    _append(pending, (None, child, depth + 1))
                    _append(pending, (_TEXT, _escape(key) + ":", 0))
                    if index:
                        _append(pending, (_TEXT, ",", 0))
                stack += pending
                continue
            else:
                return None
            _append(out, piece)
            size += _len(piece)
        text = _join(out)
        return None if _len(text) > max_chars else text

    return encode


class FrameError(ValueError):
    """The result channel carried something the harness never writes."""


def _no_constants(name: str) -> Any:
    raise FrameError(f"non-JSON constant {name}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise FrameError("duplicate key")
    return result


def decode_json(text: str | bytes) -> Any:
    """Parse JSON as the grader trusts it: no NaN or Infinity, no duplicate keys, bounded depth."""
    try:
        value = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:
        raise FrameError("malformed JSON") from exc
    _check_shape(value, 0)
    return value


def _check_shape(value: Any, depth: int) -> None:
    if depth > LIMITS["depth"] + 8:
        raise FrameError("too deep")
    if isinstance(value, dict):
        for child in value.values():
            _check_shape(child, depth + 1)
    elif isinstance(value, list):
        for child in value:
            _check_shape(child, depth + 1)
    elif (
        isinstance(value, int)
        and not isinstance(value, bool)
        and abs(value) >= 10 ** LIMITS["int_digits"]
    ):
        raise FrameError("integer out of range")
