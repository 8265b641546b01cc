"""The MCP server's edge for a lone surrogate (issue 49): the SDK's JSON reader
(pydantic-core) refuses the escape ``\\ud800`` by handing the session an exception, and the
request is never answered. :class:`MarkedLines` is stdin as the SDK reads it with each such
escape turned into U+FFFE (a noncharacter, valid JSON); :func:`lone_surrogate_refusal` finds
it, or a lone surrogate that got through another way, in a tool call, for its one error."""

from __future__ import annotations

import io
import re
import sys
from typing import Any, Optional

from torchscope.ingest.text import lone_surrogate_at, surrogate_message

_LONE_ESCAPE = re.compile(
    r"(?<!\\)\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})(?<!\\)\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
"""A JSON escape of a lone surrogate (a high one not followed by a low one, or a low one
alone), which the SDK's JSON reader refuses without answering the request."""
_MARK = "\ufffe"
"""What such an escape becomes on the way in (a noncharacter, valid JSON): the tool call
holding it is refused by ``mcp_server._EdgeServer``."""


class MarkedLines:
    """stdin as the SDK reads it (UTF-8, bad bytes replaced), each lone surrogate's escape
    turned into :data:`_MARK`, so the request parses and gets its one error answer."""

    def __init__(self) -> None:
        self._lines = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")

    def readline(self) -> str:
        return _LONE_ESCAPE.sub(lambda _: "\\ufffe", self._lines.readline())

    def close(self) -> None:
        self._lines.close()


def _marked_at(value: Any, where: str = "") -> Optional[str]:
    """Where :data:`_MARK` is in ``value`` (a lone surrogate's escape was there)."""
    if isinstance(value, str):
        return where if _MARK in value else None
    if isinstance(value, dict):
        value = {str(k): v for k, v in value.items()}
        found = (_marked_at(v, f"{where}.{k}" if where else k) for k, v in value.items())
    elif isinstance(value, list):
        found = (_marked_at(v, f"{where}[{i}]") for i, v in enumerate(value))
    else:
        return None
    return next((f for f in found if f is not None), None)




def lone_surrogate_refusal(call: dict[str, Any]) -> Optional[str]:
    """The one message for a tool call (``{"name", "arguments"}``) holding a lone surrogate,
    None when it holds none."""
    bad = lone_surrogate_at(call) or _marked_at(call)
    return None if bad is None else surrogate_message(f"the tool call's {bad}")
