"""Markdown links that run a client command (hovers' "Open trace", "open the generated code")."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any


def command_link(title: str, command: str, argument: Any) -> str:
    encoded = urllib.parse.quote(json.dumps([argument]))
    return f"[{title}](command:{command}?{encoded})"
