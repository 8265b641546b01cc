"""The causes of the time per call, each with its measured cost, costliest first.

The verdict names the costliest cause (DESIGN.md §3, "The verdict"). Every cost comes from a
number the findings use too, so the headline and the findings cannot disagree:

- first the call's wait for a CPU (``Measurements.wait_us``: runnable while another process
  held the core) is set aside: it is the machine's load, not the function's cost, and a
  verdict drawn from it flipped with the load. The causes share out the rest, the time the
  call ran (``CpuCosts.run_us``);
- ``threads``: the timing pass's interleaved one-thread batches (``Measurements``
  ``single_thread_us``, as ``thread-contention``): the median over pairs of (N threads − one
  thread) when positive, the time the intra-op threads cost;
- ``page-faults``: minor faults per call × the calibrated cost of one (``allocation-churn``);
- ``dispatch``: top-level ops per call × the measured per-op floor;
- ``compute`` / ``bandwidth`` / ``rng``: the rest of the call, the ops' own bodies, split by
  the profiled time of math ops (and ops without a known work) against copy-like ops and
  random-number ops (dropout's mask: the generator's arithmetic per element, not bandwidth)
  (``measure/opclass``);
- on a GPU trace: ``compute`` (kernels), ``bandwidth`` (memcpy), ``comm`` (collectives),
  ``sync`` (CPU blocked in synchronising calls), ``input`` (device idle inside DataLoader) and
  ``dispatch`` (the rest of the device's idle time: the CPU not launching fast enough).

``compute-bound`` needs more than the most time in compute: the hardware must be doing the
math near its peak (:data:`COMPUTE_FLOOR`). The efficiency is the call's GEMM FLOPs over its
whole time per call, against the peak (measured on this machine, spec sheet otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import comb
from typing import NamedTuple

from ...protocol import MIN_FAULTS_PER_CALL
from ..index.columns import median
from ..index.context import Context
from ..measure.efficiency import Efficiency
from ..measure.memory import page_fault_numbers
from ..measure.opclass.cost import RNG
from ..results import Cause, Measurements, StepMetrics

CAUSES = (
    "dispatch",
    "threads",
    "page-faults",
    "rng",
    "bandwidth",
    "compute",
    "sync",
    "input",
    "comm",
)
"""Every cause a verdict can name; on a tie the earlier one wins (the overheads come first:
they are the cheaper fix)."""

COMPUTE_FLOOR = {
    ("cpu", "measured"): 0.30,
    ("cpu", "spec-sheet"): 0.20,
    ("cuda", "measured"): 0.30,
    ("cuda", "spec-sheet"): 0.20,
}
"""(device kind, peak source) → the least efficiency (achieved FLOP/s / peak) ``compute-bound``
needs. A measured peak is the best this machine did on a large GEMM, which a well-shaped GEMM
reaches at 60-90 %: 30 % is the line ``low-efficiency-gemm`` draws, and it leaves room for a
shared machine (a 2-core CPU with one core taken halves what a 2-thread GEMM can reach). A
spec-sheet peak is the vendor's best case, which dense GEMMs reach at 50-70 %: 20 %."""


@dataclass(frozen=True)
class CpuCosts:
    """The CPU causes of one call and the numbers the headlines quote."""

    call_us: float
    dispatch_floor_us: float
    ops_per_call: float
    costs: dict[str, float]
    one_thread_us: float | None
    """Median time per call at one intra-op thread (None: not measured)."""
    threads: int
    faults_per_call: float | None
    gemm_flops: float
    """FLOPs per call of the GEMM-like ops (0: none with recorded shapes)."""
    wait_us: float = 0.0
    """Of ``call_us``, the median wait for a CPU that another process held (not a cause)."""

    @property
    def run_us(self) -> float:
        """The time per call the call ran: what the causes share out."""
        return self.call_us - self.wait_us


def ranked(costs: dict[str, float], total: float) -> list[Cause]:
    """The causes with a cost, costliest first (``CAUSES`` order on ties)."""
    order = {c: k for k, c in enumerate(CAUSES)}
    kept = [(c, us) for c, us in costs.items() if us > 0]
    kept.sort(key=lambda cu: (-cu[1], order[cu[0]]))
    return [Cause(c, us, min(1.0, us / total) if total > 0 else 0.0) for c, us in kept]


THREADS_FASTER = 0.8
"""One thread at least 20 % faster (median ratio one-thread / N-threads ≤ 0.8): beyond timing
noise on a shared machine. Below it the threads are no cause and no finding."""

SIGN_TEST_P = 0.05


def sign_test_p(wins: int, n: int) -> float:
    """One-sided P(at least ``wins`` of ``n`` fair coin flips)."""
    return float(sum(comb(n, k) for k in range(wins, n + 1))) / float(2**n)


@dataclass(frozen=True)
class Contention:
    """The interleaved pairs' judgment (``thread-contention`` and the ``threads`` cause)."""

    ratio: float
    """Median over the pairs of one-thread time / N-threads time."""
    pairs: int
    p_value: float

    @property
    def contended(self) -> bool:
        """One thread measured faster by more than the noise."""
        return self.ratio <= THREADS_FASTER and self.p_value <= SIGN_TEST_P


def contention(m: Measurements) -> Contention | None:
    """The pairs' median ratio and sign test (None: no one-thread batches were timed)."""
    if m.threads <= 1 or not m.single_thread_us:
        return None
    ratios = [s / c for c, s in zip(m.call_us, m.single_thread_us) if c > 0]
    if not ratios:
        return None
    wins = sum(1 for r in ratios if r < 1.0)
    return Contention(median(ratios), len(ratios), sign_test_p(wins, len(ratios)))


def threads_cost(m: Measurements) -> float:
    """Median over the interleaved pairs of (N threads − one thread), when positive and one
    thread measured faster beyond the noise (``contention``: the test ``thread-contention``
    applies, so the cause never comes without its finding); each side in the time it ran (its
    wait for a CPU another process held set aside) when measured."""
    judged = contention(m)
    if judged is None or not judged.contended:
        return 0.0
    calls, singles = m.call_us, m.single_thread_us
    if len(m.wait_us) == len(calls) and len(m.single_wait_us) == len(singles):
        calls = [c - w for c, w in zip(calls, m.wait_us)]
        singles = [s - w for s, w in zip(singles, m.single_wait_us)]
    diffs = [c - s for c, s in zip(calls, singles)]
    return max(0.0, median(diffs)) if diffs else 0.0


class BodySplit(NamedTuple):
    memory_share: float
    """Share of the ops' profiled time in copy-like ops (elementwise, reductions, copies)."""
    rng_share: float
    """Share in random-number ops (``opclass`` class ``rng``)."""
    gemm_flops: float
    """Math FLOPs per step."""


def _body_split(ctx: Context, eff: Efficiency, metrics: list[StepMetrics]) -> BodySplit:
    steps = max(1, len(ctx.steps))
    outer = list(eff.outer)
    rng = eff.totals([i for i in outer if eff.work[i].op_class == RNG])
    memory = eff.totals(
        [i for i in outer if eff.work[i].kind == "memory" and eff.work[i].op_class != RNG]
    )
    gemm = eff.totals([i for i in outer if eff.work[i].kind == "gemm"])
    op_time = median([s.cpu_op_us for s in metrics]) if metrics else 0.0
    total = max(op_time, (memory.time_us + rng.time_us + gemm.time_us) / steps)
    if total <= 0:
        return BodySplit(0.0, 0.0, gemm.flops / steps)
    mem_share = min(1.0, memory.time_us / steps / total)
    rng_share = min(1.0 - mem_share, rng.time_us / steps / total)
    return BodySplit(mem_share, rng_share, gemm.flops / steps)


def cpu_costs(
    ctx: Context, metrics: list[StepMetrics], eff: Efficiency, default_floor_us: float
) -> CpuCosts:
    """The CPU causes, from the unprofiled measurements when there are some (else from the
    profiled op times, with ``default_floor_us`` per op)."""
    ops_per_call = median([float(s.ops) for s in metrics])
    m = ctx.measurements
    if m is not None and m.call_us:
        call_us, floor = median(m.call_us), m.dispatch_floor_us
        wait = min(call_us, median(m.wait_us)) if m.wait_us else 0.0
        run_us = call_us - wait
        threads = min(run_us, threads_cost(m))
        counted, fault_cost, _, _ = page_fault_numbers(ctx)
        noise = counted is None or counted < MIN_FAULTS_PER_CALL  # as allocation-churn
        faults = 0.0 if noise else min(run_us - threads, fault_cost or 0.0)
        faults_per_call = median(m.page_faults) if m.page_faults else None
        one = median(m.single_thread_us) if m.single_thread_us and m.threads > 1 else None
        n_threads = m.threads
    else:
        call_us = median([s.cpu_op_us for s in metrics]) or median([s.wall_us for s in metrics])
        wait = 0.0
        run_us = call_us
        floor, threads, faults, faults_per_call, one, n_threads = (
            default_floor_us,
            0.0,
            0.0,
            None,
            None,
            0,
        )
    dispatch = min(max(0.0, run_us - threads - faults), ops_per_call * floor)
    body = max(0.0, run_us - threads - faults - dispatch)
    split = _body_split(ctx, eff, metrics)
    costs = {
        "dispatch": dispatch,
        "threads": threads,
        "page-faults": faults,
        "rng": body * split.rng_share,
        "bandwidth": body * split.memory_share,
        "compute": body * (1.0 - split.memory_share - split.rng_share),
    }
    return CpuCosts(
        call_us, floor, ops_per_call, costs, one, n_threads, faults_per_call, split.gemm_flops, wait
    )


def compute_efficiency(eff: Efficiency, costs: CpuCosts) -> float | None:
    """The call's GEMM FLOP/s over the time it ran per call, against the matmul peak of the
    dominant GEMM's dtype (None: no GEMM with shapes, or no peak)."""
    if eff.peaks is None or costs.gemm_flops <= 0 or costs.run_us <= 0:
        return None
    gemms = [i for i in eff.outer if eff.work[i].kind == "gemm"]
    if not gemms:
        return None
    key = eff.peak_key.get(gemms[0], eff.work[gemms[0]].dtype)
    peak = eff.peaks.matmul_gflops.get(key)
    if not peak:
        return None
    return min(1.0, costs.gemm_flops / costs.run_us / 1e3 / peak)


def compute_floor(device_kind: str, source: str) -> float:
    """The ``COMPUTE_FLOOR`` of a device class (an unknown source is held to the spec-sheet
    line)."""
    kind = "cuda" if device_kind == "cuda" else "cpu"
    return COMPUTE_FLOOR.get((kind, source), COMPUTE_FLOOR[(kind, "spec-sheet")])


def gpu_costs(metrics: list[StepMetrics]) -> tuple[dict[str, float], float]:
    """The GPU causes per step (medians over steps) and the step's wall time."""
    wall = median([s.wall_us for s in metrics])
    busy = median([s.device_busy_us for s in metrics])
    memcpy = median([s.memcpy_us for s in metrics])
    comm = median([s.comm_us for s in metrics])
    sync = median([s.sync_us for s in metrics])
    wait = median([s.input_wait_us for s in metrics])
    costs = {
        "compute": max(0.0, busy - memcpy - comm),
        "bandwidth": memcpy,
        "comm": comm,
        "sync": sync,
        "input": wait,
        "dispatch": max(0.0, wall - busy - wait - sync),
    }
    return costs, wall


DEVICE_WORK = ("compute", "comm")
"""The GPU causes that are the device's own work: kernels and collectives."""


def gpu_ranked(costs: dict[str, float], wall: float, device_floor: bool) -> list[Cause]:
    """The GPU causes in the order of what holds the step. When the device is the floor of
    the step (``device_floor``: busy at least ``verdict.COMPUTE_BOUND_BUSY``) that is the
    costliest first. Otherwise the device waits on the host for over a fifth of the step: a
    faster kernel would only lengthen its idle time, so the causes of that idle time (input,
    sync, dispatch) and the copies the host issues come first, costliest first, and the
    device's own work follows, ``hidden``, with its cost."""
    causes = ranked(costs, wall)
    if device_floor:
        return causes
    held = [c for c in causes if c.cause not in DEVICE_WORK]
    under = [replace(c, hidden=True) for c in causes if c.cause in DEVICE_WORK]
    return held + under if held else causes
