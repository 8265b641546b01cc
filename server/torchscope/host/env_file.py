"""Environment variables for the worker from an env file (``torchscope.envFile``, the Python
extension's ``python.envFile``, a launch configuration's ``envFile``) and a map
(``torchscope.env``, a launch configuration's ``env``), the map winning.

The file is the ``.env`` format VS Code's Python extension reads: ``NAME=VALUE`` lines, ``#``
comments, an optional ``export``, values in single quotes (as written) or double quotes
(``\\n`` escapes), ``${NAME}`` replaced by a variable set above or in the host's environment.
Written here (40 lines) rather than with ``python-dotenv``: the server's dependencies ship
inside the extension, and this is the whole of what the editor's files use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class EnvFileError(ValueError):
    """The file cannot be read, or a line is not ``NAME=VALUE``; the message names it."""


def _value(raw: str, known: Mapping[str, str]) -> str:
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1].replace("\\n", "\n").replace('\\"', '"')
    else:
        raw = re.sub(r"\s+#.*$", "", raw)  # an unquoted value ends at a comment
    return _VARIABLE.sub(lambda m: known.get(m.group(1), os.environ.get(m.group(1), "")), raw)


def read_env_file(path: Path) -> dict[str, str]:
    """The variables ``path`` sets; a missing file sets none (``.env`` is optional)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvFileError(f"env file {path} cannot be read: {exc}") from None
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise EnvFileError(f"env file {path} line {number}: expected NAME=VALUE, got {line!r}")
        found[match.group(1)] = _value(match.group(2), found)
    return found


def environment(
    env: Mapping[str, str], env_file: Optional[str], root: Optional[Path]
) -> dict[str, str]:
    """``env_file``'s variables (a path relative to ``root``), then ``env`` over them."""
    found: dict[str, str] = {}
    if env_file:
        path = Path(env_file).expanduser()
        found = read_env_file(path if path.is_absolute() or root is None else root / path)
    return {**found, **env}
