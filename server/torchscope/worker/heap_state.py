"""Does the call's page-fault cost depend on the process's heap history? (glibc on Linux)

glibc serves a block from its heap, or maps it afresh, by a threshold that moves: it starts at
128 KiB and rises to the size of each mapped block freed, up to 32 MiB
(``DEFAULT_MMAP_THRESHOLD_MAX``); the heap's free top is handed back to the OS past twice that.
A call whose temporaries are between those sizes can therefore take no page fault in one process
(the heap keeps their pages) and thousands in another (they are mapped, or the heap trimmed, on
every call): measured here, 0 or 8160 faults per call for two 16 MiB temporaries, 3.2 ms or
7.4-9.3 ms per call, and the verdict memory-bound or overhead-bound by the process it ran in.
Blocks above 32 MiB are always mapped afresh: their faults are the same in every process.

``heap_line`` looks from whichever side this process is on, after the timing pass:

- **no faults per call**: hand the free heap back (``malloc_trim(0)``) and count one call's
  faults. Pages the call takes again are temporaries the heap was keeping;
- **faults per call**: one call under ``profile_memory`` names the blocks it allocates and
  frees; those of 128 KiB to 32 MiB are the ones another heap could keep.

Either way, when the faults another process may pay or skip are a quarter of the call or more,
the verdict is unstable, with the line saying why and what makes it one answer. Neither probe
changes the allocator's settings (``mallopt`` would, for every later job of this worker).
"""

from __future__ import annotations

import ctypes
import mmap
import platform
import statistics
import sys
from typing import Any, Callable

from torchscope.protocol import GLIBC_MMAP_MAX, MIN_FAULTS_PER_CALL
from torchscope.worker.page_faults import minor_faults
from torchscope.worker.stability import duration_text as _us
from torchscope.worker.timing import TimingSamples

#: glibc's dynamic mmap threshold starts here and rises up to ``GLIBC_MMAP_MAX``.
MMAP_LOW = 128 * 1024
#: Faults another process may pay or skip, as a share of the call with them, that can flip the
#: verdict (the page-faults cause against the call's next costliest one).
FLIP_SHARE = 0.25
#: Probing costs a few calls: not for calls this long.
MAX_CALL_US = 1e6
ADVICE = "keep the buffers across calls (`out=`, in-place ops) and every process pays the same"


def glibc() -> Any:
    """The C library when it is glibc with ``malloc_trim`` (None elsewhere)."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def _faults_after_trim(invoke: Callable[[], Any], libc: Any) -> float:
    """Faults of one call right after the heap handed its free pages back (the fewer of 2:
    a stray fault of the interpreter does not count)."""
    counts = []
    for _ in range(2):
        libc.malloc_trim(0)
        before = minor_faults()
        invoke()
        counts.append(minor_faults() - before)
    return float(min(counts))


def _temporary_blocks(invoke: Callable[[], Any]) -> list[int]:
    """Sizes of the blocks one call allocates and frees on the CPU (``profile_memory``)."""
    from torch.profiler import ProfilerActivity, profile

    from torchscope.worker.profiling import quiet_profiler

    with quiet_profiler(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as p:
        invoke()
    sizes: list[int] = []
    for event in p.profiler.kineto_results.events():
        if event.name() == "[memory]" and event.nbytes() < 0:
            sizes.append(-int(event.nbytes()))
    return sizes


def heap_line(invoke: Callable[[], Any], samples: TimingSamples, fault_us: float) -> str:
    """Why the page-fault cost depends on the heap's history, one line ending in what to do;
    "" when it does not (or it cannot be told: no glibc, a long call, a call that raised).
    ``samples``: the timing pass's, for the median call and its faults."""
    call_us = statistics.median(samples.per_call_us)
    faults_per_call = statistics.median(samples.page_faults) if samples.page_faults else 0.0
    libc = glibc()
    if libc is None or fault_us <= 0 or call_us <= 0 or call_us > MAX_CALL_US:
        return ""
    try:
        if faults_per_call < MIN_FAULTS_PER_CALL:
            fresh = _faults_after_trim(invoke, libc)
            cost = fresh * fault_us
            if fresh < MIN_FAULTS_PER_CALL or cost < FLIP_SHARE * (call_us + cost):
                return ""
            why = (
                f"this process's heap kept the call's temporaries ({faults_per_call:.0f} page "
                f"faults per call), but once it hands them back a call takes {fresh:.0f} faults "
                f"≈ {_us(cost)}, as it can on every call in another process"
            )
        else:
            cost = faults_per_call * fault_us
            blocks = [b for b in _temporary_blocks(invoke) if MMAP_LOW <= b <= GLIBC_MMAP_MAX]
            kept = min(sum(blocks) / mmap.PAGESIZE, faults_per_call) * fault_us
            if not blocks or kept < FLIP_SHARE * max(call_us, cost):
                return ""
            why = (
                f"the call's {_blocks(blocks)} are below glibc's 32 MiB mmap limit, so whether "
                f"they are mapped afresh ({faults_per_call:.0f} page faults ≈ {_us(cost)} per "
                "call, as here) or kept by the heap (none) depends on the process's heap history"
            )
    except Exception:  # the call ran many times already; a probe that fails tells nothing
        return ""
    return f"unstable: {why}; {ADVICE}"


def _blocks(sizes: list[int]) -> str:
    sizes = sorted(sizes, reverse=True)
    if len(set(sizes)) == 1:
        return f"{len(sizes)} temporar{'y' if len(sizes) == 1 else 'ies'} of {_bytes(sizes[0])}"
    return f"{len(sizes)} temporaries of {_bytes(sizes[-1])}–{_bytes(sizes[0])}"


def _bytes(n: float) -> str:
    return f"{n / 2**20:.3g} MiB" if n >= 2**20 else f"{n / 1024:.3g} KiB"
