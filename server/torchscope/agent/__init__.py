"""The agent inside a running job: ``torchscope attach`` profiles the job's own next calls of a
function through it (docs/attach.md).

Importing this package imports the standard library only (no torch, no msgpack): a job that
never gets a request pays one idle thread blocked in ``accept``. Three ways in:

- ``python -m torchscope.agent train.py ARGS…`` (or ``-m module ARGS…``);
- ``TORCHSCOPE_AGENT=1`` in the environment: the ``torchscope-agent.pth`` hook installed with
  the package calls :func:`autostart` at interpreter start (nothing else happens without it);
- ``import torchscope.agent; torchscope.agent.listen()`` in the script.
"""

from __future__ import annotations

import os
from typing import Optional

__all__ = ["ENV", "autostart", "listen"]

ENV = "TORCHSCOPE_AGENT"
"""Set to 1 to start the agent in every Python process of the job (the ``.pth`` hook)."""


def listen(folder: Optional[str] = None) -> str:
    """Start this process's agent (once; again in a forked child that calls it) and return
    its socket's path. ``folder``: where the socket goes (default: ``agent.paths``)."""
    from torchscope.agent.listener import start

    return start(folder)


def autostart() -> None:
    """The ``.pth`` hook's call: start the agent when ``TORCHSCOPE_AGENT`` is 1 (any failure is
    one line on stderr, never the job's end)."""
    if os.environ.get(ENV, "") in ("", "0"):
        return
    try:
        listen()
    except Exception as exc:  # the job comes first
        import sys

        print(f"torchscope agent: not started: {exc}", file=sys.stderr)
