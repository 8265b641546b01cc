"""The one worker loop of every A/B comparison: two (or more) callables timed in interleaved
rounds with no profiler, for ``diff``, a fix's trial (a ``diff`` job), ``check`` (``diff``
jobs) and ``--compare-compile``. The statistics are the host's (``analysis/multi/ab.py``).

Each round times one batch of each side, the order alternating (A B, B A, …), so a burst of
load on a shared machine hits both alike. Each batch records its wall time and how long the
calling thread waited for a CPU meanwhile (``timing._time_batch``: the run-queue delay), so a
round in which another process held the core for one side more than the other can be dropped;
the machine's load over the rounds is measured as ``profile`` measures it
(``stability.MachineLoad``), and each side gets
``profile``'s stability line (``stability.unstable_line``).

The rounds run for the budget; then, while the ratio of the two sides' clean rounds is not yet
known to half the no-difference band (the notch rule of ``timing._known`` on the per-round
ratios), up to :data:`EXTEND` times the budget more: a comparison measures more before it
says *inconclusive*, and the result says how many rounds that added.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from torchscope.protocol import NO_DIFFERENCE_BAND, Machine, waited_apart
from torchscope.worker.compile_tools import steady_allocator
from torchscope.worker.stability import MachineLoad, unstable_line
from torchscope.worker.timing import (
    FLOOR_BATCH,
    MIN_FLOOR_SAMPLES,
    _floor_batch,
    _floor_op,
    _known,
    _synchronizer,
    _time_batch,
)

PAIR_SAMPLE_S = 1e-3
"""Each interleaved sample is a batch lasting at least this long: long enough for the clock
to vanish and for the two sides' batches to sit within a few milliseconds of each other."""

MAX_PAIR_BATCH = 10_000

MIN_ROUNDS = 5
"""Rounds timed even when the budget runs out (a slow function still gets a median of 5)."""

MAX_ROUNDS = 200
"""Rounds stop here (or at ``timing_calls``, if higher) or when the timing budget, a profile's
``timing_budget_s`` per side, is spent. The more rounds, the steadier the median ratio: at
1024×1024 (~25 ms a call) the budget allows ~80, where 20 left a 7 % swing between runs on a
shared 2-core machine."""

EXTEND = 1.0
"""After the budget, up to this many budgets more while the ratio is not known (see above)."""

RATIO_PRECISION = NO_DIFFERENCE_BAND / 2
"""The ratio is *known* when its median's notch is within this share of it."""

CHECK_EVERY = 5
"""Rounds between two evaluations of the stopping rule in the extension."""


@dataclass
class Interleaved:
    """Per side, µs per call of each round and µs per call it waited for a CPU; the dispatch
    floor; the machine's load over the rounds; rounds timed past the budget; per side
    ``profile``'s unstable line ("" when stable)."""

    call_us: list[list[float]]
    wait_us: list[list[float]]
    floor_us: list[float]
    machine: Optional[Machine] = None
    rounds_added: int = 0
    unstable: list[str] = field(default_factory=list)


def _clean_ratios(interleaved: Interleaved) -> list[float]:
    """Last side over first, per round, of the rounds kept (``protocol.waited_apart``)."""
    first, last = interleaved.call_us[0], interleaved.call_us[-1]
    w_first, w_last = interleaved.wait_us[0], interleaved.wait_us[-1]
    return [
        b / a
        for a, b, wa, wb in zip(first, last, w_first, w_last)
        if a > 0 and b > 0 and not waited_apart(a, b, wa, wb)
    ]


def _ratio_known(interleaved: Interleaved) -> bool:
    ratios = _clean_ratios(interleaved)
    return len(ratios) >= MIN_ROUNDS and _known(ratios, RATIO_PRECISION)


def time_interleaved(
    invokes: list[Callable[[], Any]],
    estimates_s: list[float],
    timing_calls: int,
    timing_budget_s: float,
    use_cuda: bool,
) -> Interleaved:
    """Per-call µs of each callable, one batch per side per round, alternating the order,
    for ``MIN_ROUNDS`` to ``max(timing_calls, MAX_ROUNDS)`` rounds until ``timing_budget_s``
    per side is spent, then on while the ratio is not known (module docstring); plus the
    per-op dispatch floor, one batch per round.

    Each batch follows one untimed call of the same side (``settle``): switching sides leaves
    the allocator and the caches in the other side's state (``compile_tools.steady_allocator``
    first: eager right after a compiled call paid ~1000 page faults)."""
    steady_allocator()
    sync = _synchronizer(use_cuda)
    floor_op = _floor_op()
    for _ in range(FLOOR_BATCH):
        floor_op()
    batches = [min(MAX_PAIR_BATCH, max(1, int(PAIR_SAMPLE_S / max(e, 1e-9)))) for e in estimates_s]
    out = Interleaved([[] for _ in invokes], [[] for _ in invokes], [])
    rounds = max(timing_calls, MAX_ROUNDS)
    clock = time.perf_counter
    budget = timing_budget_s * len(invokes)
    start = clock()
    load = MachineLoad()
    order = list(range(len(invokes)))
    done = base = 0
    while done < rounds:
        elapsed = clock() - start
        if done >= MIN_ROUNDS and elapsed >= budget:
            if not base:
                base = done
            stop = elapsed >= budget * (1 + EXTEND) or len(invokes) < 2
            if stop or ((done == base or done % CHECK_EVERY == 0) and _ratio_known(out)):
                break
        for k in order if done % 2 == 0 else order[::-1]:
            invokes[k]()  # settle (see above)
            wall, wait = _time_batch(invokes[k], batches[k], sync)
            out.call_us[k].append(wall)
            out.wait_us[k].append(wait)
        out.floor_us.append(_floor_batch(floor_op))
        done += 1
    while len(out.floor_us) < MIN_FLOOR_SAMPLES:
        out.floor_us.append(_floor_batch(floor_op))
    out.machine = load.measured()
    out.rounds_added = done - base if base else 0
    out.unstable = [
        unstable_line(us, [], out.machine, False, wait_us=waits)
        for us, waits in zip(out.call_us, out.wait_us)
    ]
    return out
