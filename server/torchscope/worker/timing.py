"""Wall-clock timing without the profiler: the ground truth every headline number comes from.

A call of a few microseconds is close to the clock's own cost, so fast functions are timed in
batches (each sample is the mean of one batch); slow ones one call per sample. On CUDA the
device is synchronised around each sample, so queued kernels are paid for where they were
launched.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

#: A batch should last at least this long for the clock's overhead (~50 ns) to vanish.
MIN_SAMPLE_S = 100e-6
MAX_BATCH = 1000


@dataclass
class TimingSamples:
    per_call_us: list[float]
    calls: int


def _synchronizer(use_cuda: bool) -> Callable[[], None]:
    if use_cuda:
        import torch

        synchronize: Callable[[], None] = torch.cuda.synchronize
        return synchronize
    return lambda: None


def time_calls(
    invoke: Callable[[], Any],
    estimate_s: float,
    samples: int,
    budget_s: float,
    use_cuda: bool,
) -> TimingSamples:
    """Time ``samples`` samples (at least 3, fewer if ``budget_s`` runs out)."""
    sync = _synchronizer(use_cuda)
    batch = 1
    if estimate_s < MIN_SAMPLE_S:
        batch = min(MAX_BATCH, max(1, int(MIN_SAMPLE_S / max(estimate_s, 1e-9))))
    per_call_us: list[float] = []
    clock = time.perf_counter
    deadline = clock() + budget_s
    while len(per_call_us) < samples and (len(per_call_us) < 3 or clock() < deadline):
        sync()
        start = clock()
        for _ in range(batch):
            invoke()
        sync()
        per_call_us.append((clock() - start) * 1e6 / batch)
    return TimingSamples(per_call_us, len(per_call_us) * batch)


def dispatch_floor_us() -> float:
    """The cost of dispatching one trivial op (a 1-element ``torch.add``) on this machine now.

    Ops per call × this floor estimates what a call pays in dispatch alone, whatever the sizes.
    """
    import torch

    a = torch.zeros(1)
    for _ in range(200):
        torch.add(a, a)
    samples = time_calls(lambda: torch.add(a, a), 1e-6, samples=15, budget_s=0.5, use_cuda=False)
    return statistics.median(samples.per_call_us)
