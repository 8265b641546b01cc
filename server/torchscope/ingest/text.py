"""Lone surrogates out of decoded JSON strings.

JSON may spell a UTF-16 surrogate alone (``"\\ud800"``); stdlib ``json`` decodes it to a
``str`` that no UTF-8 stream can hold, so printing it, sending it over LSP or MCP, or writing
it as JSON would fail far from the trace. The readers replace each lone surrogate with
U+FFFD (the replacement character) as the value is decoded, so no later stage sees one.
Only documents whose bytes spell a surrogate escape pay for the walk (:func:`has_surrogate`).
"""

from __future__ import annotations

import re
from typing import Any

_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")


def has_surrogate(data: Any) -> bool:
    """Whether the JSON bytes ``data`` spell a surrogate escape (paired or not)."""
    return _ESCAPE.search(data) is not None


def clean_str(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD."""
    return _LONE.sub("\ufffd", text) if _LONE.search(text) else text


def clean(value: Any) -> Any:
    """``value`` (a decoded JSON value) with every string cleaned by :func:`clean_str`."""
    if isinstance(value, str):
        return clean_str(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean_str(k): clean(v) for k, v in value.items()}
    return value


def clean_object(obj: dict[str, Any]) -> dict[str, Any]:
    """An ``object_hook`` step: ``obj``'s keys and values cleaned, where its nested objects
    already were (the hook saw them first), so only strings and lists are walked."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, str):
            value = clean_str(value)
        elif isinstance(value, list):
            value = _clean_list(value)
        out[clean_str(key)] = value
    return out


def _clean_list(values: list[Any]) -> list[Any]:
    return [
        clean_str(v) if isinstance(v, str) else _clean_list(v) if isinstance(v, list) else v
        for v in values
    ]


def lone_surrogate_at(value: Any, where: str = "") -> str | None:
    """Where in ``value`` (a decoded JSON value, or a list of arguments) a string holds a lone
    surrogate (``params.arguments[0].call``), None when none does: the faces (LSP, MCP,
    CLI) refuse such input at their edge with :func:`surrogate_message`, since no reply
    that echoes it could be encoded."""
    if isinstance(value, str):
        return where or "a string" if _LONE.search(value) else None
    if isinstance(value, (list, tuple)):
        items: Any = enumerate(value)
    elif isinstance(value, dict):
        items = value.items()
    else:
        return None
    for key, item in items:
        if isinstance(key, str) and _LONE.search(key):
            return f"{where}.<key>" if where else "a key"
        found = lone_surrogate_at(item, f"{where}[{key}]" if isinstance(key, int) else
                                  f"{where}.{key}" if where else str(key))  # fmt: skip
        if found is not None:
            return found
    return None


def surrogate_message(where: str) -> str:
    """The one message for input holding a lone surrogate."""
    return (
        f"{where} holds a lone surrogate (a half of a UTF-16 pair, e.g. \\ud800), which is not "
        "text: pass valid UTF-8/Unicode"
    )
