"""Wall-clock timing without the profiler: the ground truth every headline number comes from.

A call of a few microseconds is close to the clock's own cost, so fast functions are timed in
batches (each sample is the mean of one batch); slow ones one call per sample. On CUDA the
device is synchronised around each sample, so queued kernels are paid for where they were
launched.

Each sample also records how long the calling thread waited for a CPU: runnable, but another
process held the core (the run-queue delay of ``/proc/thread-self/schedstat``; 0 where the
kernel does not keep it). On a shared 2-core machine a call can spend most of its wall time
there, and a verdict drawn from wall time alone flipped with the load (a 1024×1024 GEMM at
124 ms per call, ~30 ms of it running, read as ``low-efficiency``). The dispatch floor is
kept in run time (its batch's wait taken out): it is a property of the machine.

The pass runs until its spread is known: at least ``samples`` samples, then on until the
median is known to ``precision`` (the notch of a box plot, 1.57 × IQR / √n, over the median:
McGill, Tukey & Larsen 1978) or the budget is spent. A steady call stops early; a noisy or slow
one uses the budget, so more budget means more samples (at most ``MAX_SAMPLES``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from torchscope.protocol import spread
from torchscope.worker.page_faults import minor_faults
from torchscope.worker.threads import intra_op_threads, one_thread

#: A batch should last at least this long for the clock's overhead (~50 ns) to vanish.
MIN_SAMPLE_S = 100e-6
MAX_BATCH = 1000

#: The timing pass stops once the median is known to ±2 % (see the module docstring).
MEDIAN_PRECISION = 0.02
MAX_SAMPLES = 1000
#: How often (in samples) the stopping rule is evaluated: sorting each time would cost more
#: than a fast sample.
CHECK_EVERY = 10


#: Floor samples: enough for a stable median even when the function is slow and few
#: samples of it fit the budget.
MIN_FLOOR_SAMPLES = 15
FLOOR_BATCH = 100


@dataclass
class TimingSamples:
    per_call_us: list[float]
    calls: int
    floor_us: list[float] = field(default_factory=list)
    """Per-op dispatch floor, measured in alternation with the calls (see ``time_calls``)."""
    threads: int = 0
    """Intra-op threads ``per_call_us`` ran with."""
    single_thread_us: list[float] = field(default_factory=list)
    """One batch at ``torch.set_num_threads(1)`` after each sample, when ``threads > 1``:
    on a shared machine a parallel op can wait for a descheduled thread (``thread-contention``)."""
    page_faults: list[float] = field(default_factory=list)
    """Minor page faults per call, one value per sample (``getrusage`` around its batch)."""
    wait_us: list[float] = field(default_factory=list)
    """µs per call of each sample the calling thread waited for a CPU (see the docstring)."""
    single_wait_us: list[float] = field(default_factory=list)
    """The same for each batch of ``single_thread_us``."""


def _synchronizer(use_cuda: bool) -> Callable[[], None]:
    if use_cuda:
        import torch

        synchronize: Callable[[], None] = torch.cuda.synchronize
        return synchronize
    return lambda: None


def _floor_op() -> Callable[[], Any]:
    """A 1-element ``torch.add``: the cost of dispatching one trivial op."""
    import torch

    a = torch.zeros(1)
    return lambda: torch.add(a, a)


def _schedstat_wait_ns() -> int:
    """Nanoseconds this thread has waited on a run queue so far (0: not kept here)."""
    try:
        with open("/proc/thread-self/schedstat", "rb") as fh:
            return int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _time_batch(
    invoke: Callable[[], Any], batch: int, sync: Callable[[], None]
) -> tuple[float, float]:
    """(wall µs per call, of which µs per call this thread waited for a CPU)."""
    clock = time.perf_counter
    sync()
    waited = _schedstat_wait_ns()
    start = clock()
    for _ in range(batch):
        invoke()
    sync()
    wall = (clock() - start) * 1e6 / batch
    wait = (_schedstat_wait_ns() - waited) / 1e3 / batch
    return wall, min(wall, max(0.0, wait))


def _more(per_call_us: list[float], samples: int, precision: float, time_left: bool) -> bool:
    """Take another sample? At least 3; ``samples`` while time is left; then until known."""
    n = len(per_call_us)
    if n < 3:
        return True
    if not time_left or n >= MAX_SAMPLES:
        return False
    if n < samples:
        return True
    if precision == float("inf"):
        return False
    return n % CHECK_EVERY != 0 or not _known(per_call_us, precision)


def _floor_batch(floor_op: Callable[[], Any]) -> float:
    """µs per dispatch-floor op, in run time (its batch's wait for a CPU taken out)."""
    wall, wait = _time_batch(floor_op, FLOOR_BATCH, _synchronizer(False))
    return wall - wait


def _known(values: list[float], precision: float) -> bool:
    """Is the median of ``values`` known to ``precision`` (a share of it)?"""
    return bool(1.57 * spread(values) / len(values) ** 0.5 <= precision)


def time_calls(
    invoke: Callable[[], Any],
    estimate_s: float,
    samples: int,
    budget_s: float,
    use_cuda: bool,
    precision: float = MEDIAN_PRECISION,
) -> TimingSamples:
    """Time at least ``samples`` samples (at least 3 if ``budget_s`` runs out first), then on
    until the median is known to ``precision`` or the budget is spent (``inf``: exactly
    ``samples``, as ranks that must take the same number do).

    A batch of the dispatch-floor op follows each sample, so both see the same machine: on a
    shared, noisy box the ratio of the two (the overhead share) stays honest even when both
    drift.
    """
    sync = _synchronizer(use_cuda)
    floor_op = _floor_op()
    for _ in range(FLOOR_BATCH):
        floor_op()
    batch = 1
    if estimate_s < MIN_SAMPLE_S:
        batch = min(MAX_BATCH, max(1, int(MIN_SAMPLE_S / max(estimate_s, 1e-9))))
    per_call_us: list[float] = []
    floor_us: list[float] = []
    threads = intra_op_threads()
    single_us: list[float] = []
    page_faults: list[float] = []
    wait_us: list[float] = []
    single_wait_us: list[float] = []
    clock = time.perf_counter
    deadline = clock() + budget_s
    while _more(per_call_us, samples, precision, clock() < deadline):
        faults_before = minor_faults()
        wall, wait = _time_batch(invoke, batch, sync)
        per_call_us.append(wall)
        wait_us.append(wait)
        page_faults.append((minor_faults() - faults_before) / batch)
        floor_us.append(_floor_batch(floor_op))
        if threads > 1 and not use_cuda:
            with one_thread():
                wall, wait = _time_batch(invoke, batch, sync)
            single_us.append(wall)
            single_wait_us.append(wait)
    while len(floor_us) < MIN_FLOOR_SAMPLES:
        floor_us.append(_floor_batch(floor_op))
    return TimingSamples(
        per_call_us,
        len(per_call_us) * batch,
        floor_us,
        threads=threads,
        single_thread_us=single_us,
        page_faults=page_faults,
        wait_us=wait_us,
        single_wait_us=single_wait_us,
    )
