"""Find, measure and kill every process a worker started, wherever it went.

Each worker runs with ``TORCHSCOPE_JOB=<uuid>`` in its environment; everything it starts
inherits the variable, even a process that calls ``setsid()`` or double-forks. The host is a
child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so such escaped descendants are re-parented
to it instead of to init, and can be reaped after they are killed. ``/proc/<pid>/environ`` is
the initial environment, so a process cannot hide by editing ``os.environ``.

On macOS none of this exists (no ``/proc``, no subreaper, no parent-death signal): there the
worker's process group is still killed, but a descendant that leaves the group survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import uuid
from collections.abc import Callable
from typing import Any, Optional, Protocol

from torchscope.chatter import is_profiler_chatter
from torchscope.protocol import parse_size

#: The environment variable naming the worker a process belongs to.
MARKER_ENV = "TORCHSCOPE_JOB"

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

#: How long a SIGTERM'd process gets before SIGKILL.
TERM_GRACE_S = 0.5


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); idempotent."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent exits (Linux)."""
    return _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))


def new_marker() -> str:
    return uuid.uuid4().hex


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or another user's
        return b""


def marked_pids(marker: str, variable: str = MARKER_ENV) -> list[int]:
    """Live processes whose initial environment has ``variable=marker`` (zombies excluded)."""
    needle = f"{variable}={marker}".encode()
    found = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            pid = int(name)
            if pid == os.getpid():
                continue
            if needle in _environ(pid).split(b"\0") and not _is_zombie(pid):
                found.append(pid)
    return found


def _stat_fields(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses


def _is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return not fields or fields[0] in ("Z", "X")


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie (killed but not yet reaped counts as gone)."""
    return not _is_zombie(pid)


def rss_bytes(pids: list[int]) -> int:
    """The summed resident memory of ``pids`` (those already gone count 0)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as handle:
                total += int(handle.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


_OWNED: dict[int, Any] = {}
"""The children we started (asyncio ``Process`` or ``Popen``), by pid: their owner reaps them
(asyncio's child watcher, ``Popen.wait``), so :func:`_reap` leaves them alone — reaping one
of them first made asyncio log "Unknown child process pid N, will report returncode 255"."""


def own(process: Any) -> None:
    """``process`` (just started) is reaped by its owner, never by :func:`_reap`."""
    for pid in [p for p, known in _OWNED.items() if known.returncode is not None]:
        del _OWNED[pid]  # reaped already: the pid may come back as someone else
    _OWNED[process.pid] = process


async def settle_owned(timeout_s: float = 2.0) -> None:
    """Wait until asyncio's child watcher has reported every child of ours that has exited:
    a transport closed (or collected) before that polls its ``Popen``, which reaps the child
    under the watcher — the same "Unknown child process" line. Called as a host closes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline and any(
        known.returncode is None and _is_zombie(pid) for pid, known in _OWNED.items()
    ):
        await asyncio.sleep(0.01)


def _reap(pids: list[int]) -> None:
    """Collect the exit status of those that became our children (we are the subreaper),
    except the ones we started (:func:`own`): one owner reaps each child."""
    for pid in pids:
        owner = _OWNED.get(pid)
        if owner is not None and owner.returncode is None:
            continue
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


async def kill_marked(
    marker: str, keep: Optional[set[int]] = None, grace_s: float = TERM_GRACE_S
) -> list[int]:
    """SIGTERM every process carrying ``marker`` (but ``keep``), SIGKILL those still there after
    ``grace_s``; returns the pids found. Repeats, so children forked meanwhile are caught too."""
    keep = keep or set()
    seen: set[int] = set()
    for _ in range(5):
        pids = [p for p in marked_pids(marker) if p not in keep]
        if not pids:
            break
        seen.update(pids)
        _signal_all(pids, signal.SIGTERM)
        deadline = asyncio.get_running_loop().time() + grace_s
        while asyncio.get_running_loop().time() < deadline:
            _reap(pids)
            if not [p for p in pids if not _is_zombie(p)]:
                break
            await asyncio.sleep(0.02)
        _signal_all(pids, signal.SIGKILL)
        await asyncio.sleep(0.01)
        _reap(pids)
    return sorted(seen)


def kill_marked_now(marker: str, keep: Optional[set[int]] = None) -> None:
    """SIGKILL every process carrying ``marker`` at once (no grace: used when stopping)."""
    for _ in range(3):
        pids = [p for p in marked_pids(marker) if p not in (keep or set())]
        if not pids:
            return
        _signal_all(pids, signal.SIGKILL)
        _reap(pids)


class _Exiting(Protocol):
    @property
    def returncode(self) -> Optional[int]: ...


async def wait_exited(process: _Exiting, timeout_s: Optional[float] = None) -> None:
    """Wait until ``process`` has exited (at most ``timeout_s``). Polls the return code, which
    the child watcher sets at exit: ``process.wait()`` on Python 3.11 also waits for the pipes
    to close, which a grandchild holding them may never let happen."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout_s is None else loop.time() + timeout_s
    while process.returncode is None and (deadline is None or loop.time() < deadline):
        await asyncio.sleep(0.02)


async def watch_memory(
    pid: int, marker: str, limit: Callable[[], Optional[int]], poll_s: float = 0.05
) -> Optional[tuple[int, int]]:
    """Poll the RSS of ``pid`` and every process carrying ``marker``; return ``(used, limit)``
    once it is over ``limit()``, or None when ``pid`` is gone."""
    loop = asyncio.get_running_loop()
    pids, rescan_at = [pid], 0.0
    while os.path.exists(f"/proc/{pid}") and not _is_zombie(pid):
        await asyncio.sleep(poll_s)
        bound = limit()
        if not bound:
            continue
        if loop.time() >= rescan_at:  # the /proc scan is the costly part: not every poll
            pids = [pid, *marked_pids(marker)]
            rescan_at = loop.time() + 0.5
        used = rss_bytes(pids)
        if used > bound:
            return used, bound
    return None


def format_size(size: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} B"


def max_memory_bytes(text: str) -> int:
    """A job's memory bound in bytes: ``JobOptions.max_memory`` parsed, or, for "" (its
    default), half the physical memory."""
    if text:
        return parse_size(text)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError):
        return 8 << 30


def memory_stop_message(over: tuple[int, int], whose: str, smaller: str) -> str:
    """What a job stopped by :func:`watch_memory` (``over``: used, limit) says: ``whose``
    processes went over, and what to ``profile`` instead."""
    used, limit = (format_size(n) for n in over)
    return (
        f"stopped at {used} (limit {limit}): {whose} processes used more memory than allowed "
        f"— profile {smaller}, or raise the limit (torchscope.maxMemory / --max-memory)"
    )


def describe_exit(code: Optional[int]) -> str:
    """What an exit status means, in words: signals by name."""
    if code is None:
        return "the worker stopped"
    if code < 0:
        number = -code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        short, advice = _SIGNAL_MEANING.get(name, (signal.strsignal(number) or "a signal", ""))
        return f"the worker crashed: {name} ({short}){advice}"
    return (
        f"the worker exited with code {code}: the code called os._exit({code}) or the "
        "interpreter died; the job was not finished"
    )


#: faulthandler's frames of torchscope's own worker (``File ".../torchscope/worker/job.py"``)
#: and of its ``python -c`` entry: a crash message quotes the user's frames, and twelve lines
#: of ours pushed faulthandler's first line (``Fatal Python error: …``) out of the quote.
_OWN_FRAMES = (
    f'File "{os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}{os.sep}',
    'File "<string>"',
)


def worth_quoting(line: str) -> bool:
    """A stderr line for a crash message: not blank, not the profiler's chatter, not
    faulthandler's list of loaded modules nor its frames of torchscope's own code."""
    text = line.strip()
    if not text or is_profiler_chatter(text) or text.startswith("Extension modules:"):
        return False
    return not text.startswith(_OWN_FRAMES)


_SIGNAL_MEANING = {
    "SIGSEGV": (
        "segmentation fault",
        " in native code — an extension or custom op read bad memory",
    ),
    "SIGABRT": ("abort", " — native code or the function called abort()"),
    "SIGKILL": ("killed", " — by another process or the kernel's out-of-memory killer"),
    "SIGBUS": ("bus error", " in native code"),
    "SIGFPE": ("arithmetic error", " in native code"),
    "SIGILL": ("illegal instruction", " — a library built for another CPU"),
    "SIGTERM": ("terminated", " by another process"),
}
