"""The worker's own safety belts, installed before any user code runs.

- It dies with its host: ``PR_SET_PDEATHSIG`` (Linux) sends SIGKILL when the process that
  started it exits, whatever killed that one. If the host is already gone by the time this
  runs, the worker exits at once.
- Native crashes (SIGSEGV, SIGABRT, ...) print the Python stack to stderr (``faulthandler``),
  which the host quotes in its message.
- stdin is /dev/null, and reading it raises an ``EOFError`` that says so.
"""

from __future__ import annotations

import ctypes
import faulthandler
import io
import os
import signal
import sys

#: The host's pid, so a worker whose host died before the death signal was armed exits too.
HOST_PID_ENV = "TORCHSCOPE_HOST_PID"

_PR_SET_PDEATHSIG = 1

STDIN_MESSAGE = (
    "stdin is /dev/null while torchscope profiles: the function cannot read input — pass it in "
    "the call expression instead, e.g. `# torchscope: fn(torch.randn(8, 8))`"
)


class StdinUnavailable(EOFError):
    """A read from stdin during a profile."""


class _NoStdin(io.TextIOBase):
    """``sys.stdin`` in the worker: every read says why there is nothing to read."""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        raise StdinUnavailable(STDIN_MESSAGE)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        raise StdinUnavailable(STDIN_MESSAGE)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 0


def die_with_host() -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    expected = os.environ.get(HOST_PID_ENV)
    if expected and expected.isdigit() and os.getppid() != int(expected):
        os._exit(70)  # the host died before the signal was armed: nobody is listening


def install() -> None:
    die_with_host()
    faulthandler.enable(file=sys.__stderr__ or sys.stderr, all_threads=False)
    sys.stdin = _NoStdin()
