"""Wall-clock timing without the profiler: the ground truth every headline number comes from.

A call of a few microseconds is close to the clock's own cost, so fast functions are timed in
batches (each sample is the mean of one batch); slow ones one call per sample. On CUDA the
device is synchronised around each sample, so queued kernels are paid for where they were
launched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from torchscope.worker.page_faults import minor_faults
from torchscope.worker.threads import intra_op_threads, one_thread

#: A batch should last at least this long for the clock's overhead (~50 ns) to vanish.
MIN_SAMPLE_S = 100e-6
MAX_BATCH = 1000


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


def _time_batch(invoke: Callable[[], Any], batch: int, sync: Callable[[], None]) -> float:
    clock = time.perf_counter
    sync()
    start = clock()
    for _ in range(batch):
        invoke()
    sync()
    return (clock() - start) * 1e6 / batch


def time_calls(
    invoke: Callable[[], Any],
    estimate_s: float,
    samples: int,
    budget_s: float,
    use_cuda: bool,
) -> TimingSamples:
    """Time ``samples`` samples (at least 3, fewer if ``budget_s`` runs out).

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
    clock = time.perf_counter
    deadline = clock() + budget_s
    while len(per_call_us) < samples and (len(per_call_us) < 3 or clock() < deadline):
        faults_before = minor_faults()
        per_call_us.append(_time_batch(invoke, batch, sync))
        page_faults.append((minor_faults() - faults_before) / batch)
        floor_us.append(_time_batch(floor_op, FLOOR_BATCH, _synchronizer(False)))
        if threads > 1 and not use_cuda:
            with one_thread():
                single_us.append(_time_batch(invoke, batch, sync))
    while len(floor_us) < MIN_FLOOR_SAMPLES:
        floor_us.append(_time_batch(floor_op, FLOOR_BATCH, _synchronizer(False)))
    return TimingSamples(
        per_call_us,
        len(per_call_us) * batch,
        floor_us,
        threads=threads,
        single_thread_us=single_us,
        page_faults=page_faults,
    )
