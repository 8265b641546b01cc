"""Markdown pieces every Markdown renderer uses: a table, and a link that runs an editor
command (``[title](command:id?args)``, the arguments JSON-encoded as VS Code expects)."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any


def md_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def command_link(title: str, command: str, argument: Any) -> str:
    """A link that runs the client command ``command`` with ``argument``."""
    encoded = urllib.parse.quote(json.dumps([argument]))
    return f"[{title}](command:{command}?{encoded})"
