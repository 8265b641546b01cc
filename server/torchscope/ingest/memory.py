"""Will a whole-trace analysis fit in memory? Asked before the trace is read.

There is no size above which a trace is refused: a trace is refused only when the memory
its analysis is estimated to need (:data:`MEMORY_FACTOR` × its uncompressed size +
:data:`MEMORY_BASE`) is more than the process may take (:func:`budget`): the memory the
system has available (``MemAvailable``), the container's (cgroup v2 ``memory.max``) and the
analysis's own limit where one applies (:func:`memory_limit`: the language and MCP servers'
analysis child runs under the job's ``maxMemory`` / ``--max-memory``). The message names the
numbers and the ways out: ``--steps FIRST-LAST``, or a machine with more memory.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextvars import ContextVar
from typing import NamedTuple

from .errors import TraceError

MEMORY_FACTOR = 0.55
"""Peak RSS of ``torchscope analyze TRACE`` (a whole trace, a fresh process), per byte of
uncompressed JSON, beyond :data:`MEMORY_BASE`. Measured on synthetic traces
(``bench/run_all.py``'s ``synthesise``; ``bench/large_traces.py``), 2026-12-03, the peak
from ``os.wait4`` of a fresh process, with spans and ``[memory]`` events in compact records,
the args in a temporary file (``fast.py``) and the analysis' columns in arrays:

======== ======== ========= ===========
events   JSON     peak RSS  peak ÷ JSON
======== ======== ========= ===========
1M       196 MB   115 MB    0.59×
10M      1976 MB  903 MB    0.46×
30M      5940 MB  2646 MB   0.45×
======== ======== ========= ===========

The slope is 0.44 bytes of memory per byte of JSON, and the line crosses 0 events at about
35 MB; 0.55 and 64 MB leave about 25 % headroom (a trace whose times are floats holds a
float object per op's self time where these hold small ints; Kineto's own indented files
take less per byte). The temporary file takes another quarter of the JSON on disk, not in
memory."""

MEMORY_BASE = 64 << 20
"""The part of the peak that does not grow with the trace: the interpreter, the analysis'
imports and the report (``analyze`` of a one-event trace peaks at 21 MB; the measured line
above crosses 0 events at 48 MB), with headroom."""

CHECK_EVERY = 64 << 20
"""Document bytes between two checks of a document whose size could not be told before it
was read (a gzip file whose trailer is implausible, or several gzip members)."""

_LIMIT: ContextVar[int | None] = ContextVar("torchscope_memory_limit", default=None)


@contextlib.contextmanager
def memory_limit(limit: int | None) -> Iterator[None]:
    """Within it, a trace needing more than ``limit`` bytes of RSS is refused before it is
    read (the analysis child runs each analysis under the job's memory limit)."""
    token = _LIMIT.set(limit)
    try:
        yield
    finally:
        _LIMIT.reset(token)


class Budget(NamedTuple):
    """The most RSS this process may reach, and what bounds it (for the message)."""

    size: int
    why: str


def _meminfo_available() -> int | None:
    """``MemAvailable`` in bytes (Linux), else ``None``."""
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_headroom() -> int | None:
    """``memory.max - memory.current`` of this process's cgroup (v2), when it has a limit."""
    try:
        with open("/sys/fs/cgroup/memory.max", "rb") as fh:
            top = fh.read().strip()
        if top == b"max":
            return None
        with open("/sys/fs/cgroup/memory.current", "rb") as fh:
            return int(top) - int(fh.read())
    except (OSError, ValueError):
        return None


def _own_rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def budget() -> Budget | None:
    """The most RSS this process may reach: what it holds now plus what the system (and its
    container) can still give, or the analysis's limit when that is lower; ``None`` where
    none of these can be told."""
    held = _own_rss()
    found: list[Budget] = []
    available = _meminfo_available()
    if available is not None:
        found.append(Budget(held + available, f"{_size(available)} of memory is available"))
    headroom = _cgroup_headroom()
    if headroom is not None:
        found.append(Budget(held + headroom, f"the container has {_size(headroom)} left"))
    limit = _LIMIT.get()
    if limit is not None:
        found.append(
            Budget(limit, f"the analysis may take {_size(limit)} (torchscope.maxMemory / "
                   "--max-memory)")
        )
    return min(found) if found else None


def memory_needed(size: int) -> int:
    """Estimated peak RSS of analysing ``size`` bytes of JSON whole."""
    return int(MEMORY_FACTOR * size) + MEMORY_BASE


def check_memory(
    name: str, size: int, available: Budget | None = None, *, so_far: bool = False
) -> None:
    """Refuse, before it is read (or before more is read: ``so_far``, ``size`` bytes read
    yet), a whole-trace analysis whose estimated need is more than ``available``
    (default: :func:`budget`)."""
    available = budget() if available is None else available
    need = memory_needed(size)
    if available is None or need <= available.size:
        return
    json_size = f"{'more than ' if so_far else ''}{_size(size)} of JSON"
    raise TraceError(
        f"{name}: too large to analyse whole on this machine: {json_size} needs about "
        f"{_size(need)} of memory ({MEMORY_FACTOR:g}× its size + {_size(MEMORY_BASE)}), and "
        f"{available.why}; analyse some steps of it with --steps FIRST-LAST (e.g. --steps "
        "10-20), which keeps only those steps' events, or analyse it on a machine with more "
        "memory"
    )


def _size(n: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1024:.0f} KB"
