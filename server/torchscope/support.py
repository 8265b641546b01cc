"""Where torchscope runs: one check, read by every face that starts it (the CLI's dispatch, and
so ``torchscope serve`` for the editors; the VS Code extension carries the same sentence in
``extension/src/constants.ts``, held equal by ``tests/unit/test_platform_support.py``).

Windows is refused up front: the worker is started with POSIX process APIs (``pass_fds``,
process groups, ``resource`` limits in ``host/``), so on Windows it could not start and the
failure would say nothing useful. WSL and a Linux machine over Remote-SSH are both Linux.
Importing this module imports nothing else.
"""

from __future__ import annotations

import sys
from typing import Optional

WINDOWS_REFUSAL = (
    "torchscope does not run on Windows (its worker needs POSIX process APIs): run it in WSL, "
    "or on a Linux machine through VS Code's Remote-SSH"
)


def refusal(platform: Optional[str] = None) -> Optional[str]:
    """The one-line message that refuses ``platform`` (default: this one), or None where
    torchscope runs."""
    return WINDOWS_REFUSAL if (platform or sys.platform) == "win32" else None
