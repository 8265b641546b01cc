"""Where agents' sockets live: ``$XDG_RUNTIME_DIR/torchscope/`` (a per-user tmpfs the system
makes 0700), else ``agents/`` in the user's torchscope cache, made 0700. One socket per job,
``agent-<pid>.sock``, mode 0600. A folder another user owns, or one others can enter, is
refused rather than used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from torchscope.files import Refused, private_folder

SOCKET_PREFIX = "agent-"
SOCKET_SUFFIX = ".sock"
THREAD_NAME = "torchscope-agent"
"""The agent's threads' names start with it (``AgentInfo.agent_threads`` counts them)."""


def socket_dir(folder: Optional[str] = None) -> Path:
    """The agents' folder (made 0700 if missing); ``PermissionError`` when it is not private."""
    if folder:
        path = Path(folder)
    elif os.environ.get("XDG_RUNTIME_DIR") and os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "torchscope"
    else:
        from torchscope.protocol import cache_dir

        path = cache_dir() / "agents"
    try:  # made 0700, no link followed; ours by name, so a looser mode is tightened
        return private_folder(path, tighten=1)
    except Refused as exc:
        raise PermissionError(
            f"{path} is not a folder of this user's: agents' sockets not kept ({exc})"
        ) from None


def socket_path(pid: int, folder: Optional[str] = None) -> Path:
    """The socket of the agent in process ``pid``."""
    return socket_dir(folder) / f"{SOCKET_PREFIX}{pid}{SOCKET_SUFFIX}"


def socket_pid(path: Path) -> Optional[int]:
    """The pid an agent socket's name says (None: not an agent's socket)."""
    name = path.name
    if not (name.startswith(SOCKET_PREFIX) and name.endswith(SOCKET_SUFFIX)):
        return None
    digits = name[len(SOCKET_PREFIX) : -len(SOCKET_SUFFIX)]
    return int(digits) if digits.isdigit() else None
