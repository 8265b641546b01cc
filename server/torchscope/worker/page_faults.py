"""Minor page faults: how many a call takes, and what one costs on this machine.

A fresh allocation of a few MB is mapped by the OS page by page on first touch (a *minor*
fault: no disk involved). On a small VM one fault costs ~10 µs, so a function that allocates
a 64 MB temporary per call pays 16k faults — often more than its arithmetic. ``getrusage``
counts them for the whole process (intra-op threads included) before and after each timing
batch; the cost of one is calibrated on the spot by touching fresh pages of a new anonymous
mapping, the same work the kernel does for a new tensor.
"""

from __future__ import annotations

import mmap
import resource
import time

#: Pages touched to calibrate: 16 MB of 4 KiB pages, ~50 ms on a 13 µs/fault VM.
CALIBRATION_BYTES = 16 * 1024 * 1024


def minor_faults() -> int:
    """Minor page faults of this process so far (all threads)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def fault_cost_us(size: int = CALIBRATION_BYTES) -> float:
    """Microseconds one minor fault costs: map ``size`` fresh bytes, write one byte per page,
    divide the time by the faults it took (0.0 when the mapping took none, e.g. no MMU).

    The time is this thread's CPU time (user + system: the kernel handles the fault on the
    faulting thread), not the wall clock: while another process holds the core the wall clock
    runs on, and the cost per fault read 3-5× high on a loaded machine (issue 55's MNIST and
    MLP training steps: "page faults" named the costliest cause of a call whose CPU time they
    nearly filled). The time the call waited for a CPU is a cause of its own (``wait_us``)."""
    page = mmap.PAGESIZE
    mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        before = minor_faults()
        start = time.thread_time()
        for offset in range(0, size, page):
            mapping[offset] = 1
        elapsed = time.thread_time() - start
        faults = minor_faults() - before
    finally:
        mapping.close()
    return elapsed * 1e6 / faults if faults > 0 else 0.0
