"""Can the job's timing be trusted? How busy the machine was, and whether the passes agree.

``MachineLoad`` reads ``/proc/stat`` (the CPUs this process may run on) and this process's own
CPU time around the job: what the other processes ran meanwhile, and the steal time a
hypervisor took, as a share of those CPUs (``busy_share``) and in cores (``other_cores``).

``passes_disagree`` (``protocol``: the report's check too): the profiled calls (their own wall
clocks, profiler included) ran faster than the unprofiled ones beyond the noise. The profiler
only adds time, so one of the passes was slowed by something else (another process held the
core): the job measures once more, and when they still disagree ``unstable_line`` says why
and what to do. A spread over ``SPREAD_LIMIT`` is unstable too (the median is not known), and
so is a call that spent ``WAIT_LIMIT`` of its time waiting for a CPU (the causes then share out
a small remainder, and which one wins flips with the load).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable, Optional

from torchscope.protocol import UNSTABLE_ADVICE, Machine, passes_disagree, spread

__all__ = ["MachineLoad", "clocked", "duration_text", "passes_disagree", "unstable_line"]

#: IQR / median above this: the samples say too little about the median to judge by it.
SPREAD_LIMIT = 0.5
#: Waiting for a CPU this share of the call or more: the causes share out a small, noisy
#: remainder (the time the call ran), and which one is costliest flips with the load.
WAIT_LIMIT = 0.5
#: Other processes' load from which the unstable line blames them (in cores).
BUSY_CORES = 0.2


def _cpu_ticks(cpus: set[int]) -> tuple[int, int]:
    """(busy, steal) clock ticks of ``cpus`` so far, from ``/proc/stat`` ((0, 0): unreadable)."""
    busy = steal = 0
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                name, *fields = line.split()
                if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                    continue
                user, nice, system, _idle, _iowait, irq, softirq, stolen = map(int, fields[:8])
                busy += user + nice + system + irq + softirq
                steal += stolen
    except (OSError, ValueError):
        return 0, 0
    return busy, steal


def _cpus() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


class MachineLoad:
    """Started before the job's calls, read after them (``measured``)."""

    def __init__(self) -> None:
        self.cpus = _cpus()
        self._tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self._start = time.perf_counter()
        self._own = self._own_s()
        self._busy, self._steal = _cpu_ticks(self.cpus)

    @staticmethod
    def _own_s() -> float:
        times = os.times()
        return times.user + times.system

    def measured(self) -> Optional[Machine]:
        """How busy the machine was since the start (None without ``/proc/stat``)."""
        busy, steal = _cpu_ticks(self.cpus)
        wall = time.perf_counter() - self._start
        if busy == 0 or wall <= 0:
            return None
        own = self._own_s() - self._own
        others = max(0.0, (busy - self._busy) / self._tick - own)
        stolen = max(0.0, (steal - self._steal) / self._tick)
        cores = len(self.cpus)
        return Machine(
            busy_share=min(1.0, (others + stolen) / (wall * cores)),
            other_cores=others / wall,
            steal_cores=stolen / wall,
            cores=cores,
        )


def clocked(invoke: Callable[[], Any], out: list[float], keep: int) -> Callable[[], Any]:
    """``invoke`` appending each call's wall µs to ``out``, the last ``keep`` kept (the
    profile pass's own clock: its first call, the profiler's warmup, drops out; ``keep`` 0:
    ``invoke`` itself)."""
    if keep <= 0:
        return invoke

    def timed() -> Any:
        start = time.perf_counter()
        try:
            return invoke()
        finally:
            out.append((time.perf_counter() - start) * 1e6)
            del out[:-keep]

    return timed


def unstable_line(
    unprofiled_us: list[float],
    profiled_us: list[float],
    machine: Optional[Machine],
    disagree: bool,
    twice: bool = True,
    wait_us: Optional[list[float]] = None,
) -> str:
    """Why the timing is unstable, one line ending in what to do; "" when it is stable.
    ``wait_us``: per sample, µs per call waiting for a CPU (``timing.py``)."""
    noisy = spread(unprofiled_us) > SPREAD_LIMIT
    waited = _wait_share(unprofiled_us, wait_us or [])
    if not disagree and not noisy and waited < WAIT_LIMIT:
        return ""
    others = machine.other_cores if machine else 0.0
    stolen = machine.steal_cores if machine else 0.0
    if stolen >= BUSY_CORES:
        why = f"the hypervisor took {_share(stolen)} of a core (steal time) during the job"
    elif others >= 1.5:
        why = f"other processes held {others:.1f} cores during the job"
    elif others >= BUSY_CORES:
        why = f"another process held {_share(others)} of a core during the job"
    elif waited >= WAIT_LIMIT:
        why = f"the calls waited for a CPU {_share(waited)} of their time (the core was taken)"
    elif disagree:
        why = (
            f"the profiled calls ran faster than the unprofiled ones (median "
            f"{duration_text(statistics.median(profiled_us))} against "
            f"{duration_text(statistics.median(unprofiled_us))})"
            + (", timed twice" if twice else "")
        )
    else:
        why = f"the timed calls spread by {_share(spread(unprofiled_us))} of their median"
    return f"unstable: {why}; {UNSTABLE_ADVICE}"


def _wait_share(call_us: list[float], wait_us: list[float]) -> float:
    """Median wait over median call (0 when not measured)."""
    if not call_us or not wait_us:
        return 0.0
    middle = statistics.median(call_us)
    return statistics.median(wait_us) / middle if middle > 0 else 0.0


def _share(value: float) -> str:
    return f"{value * 100:.0f} %"


def duration_text(value: float) -> str:
    """µs as "850 µs" or "1.2 ms"."""
    return f"{value / 1000:.3g} ms" if value >= 1000 else f"{value:.3g} µs"
