"""Why a ``torchscope run`` target's timed calls and the program's own calls took other times
(issue 55): one line, ``timed 93 ms per call, 3.6× the in-run median of 26 ms: …``.

The program's calls (``run.in_run_us``, the first one left out: it is the cold call) and the
timing pass (``timing.median_us``, run right after in the same process on the last call's
arguments) measure the same function. When they differ by more than the noise (the larger
relative spread of the two, doubled, and at least ``NOISE_FLOOR``), the line names the first
of these that explains it, from what was recorded per call (``CallSeen.shapes``,
``CallSeen.faults``) and by the timing pass (``Measurements.page_faults``, ``timing.wait_us``):

- **other shapes**: the program's calls passed tensors of other shapes than the timed call
  (another batch size: the last batch of an epoch, a validation batch);
- **page faults**: the two took page faults per call that differ by at least
  ``MIN_FAULTS_PER_CALL`` and, at the measured cost of one, by at least half the time
  difference: a fresh process faulting its heap in, or a heap that hands its pages back;
- **waiting for a CPU**: the timed calls waited for a CPU (another process held the core) for
  at least half the difference;

and otherwise says that it does not know why.
"""

from __future__ import annotations

import collections
from statistics import median
from typing import Optional

from torchscope.analysis.formatting import format_duration
from torchscope.protocol import MIN_FAULTS_PER_CALL, CallSeen, Measurements, spread

NOISE_FLOOR = 0.20
"""Times within this share of each other are the same number on a shared machine."""
EXPLAINS = 0.5
"""A cause names the difference when it accounts for at least this share of it."""


def differs(timed_us: float, in_run_us: list[float], timed_spread: float) -> bool:
    """The timed median and the program's median differ by more than the noise."""
    if timed_us <= 0 or not in_run_us or median(in_run_us) <= 0:
        return False
    noise = max(NOISE_FLOOR, 2 * max(timed_spread, spread(in_run_us)))
    ratio = timed_us / median(in_run_us)
    return max(ratio, 1 / ratio) > 1 + noise


def _shapes(calls: list[CallSeen]) -> str:
    """``other shapes: 3 of the program's 4 calls had [64, 1, 28, 28], the timed call
    [16, 1, 28, 28] (another batch size)``, or ""."""
    if not calls or not calls[-1].shapes:
        return ""
    timed = calls[-1].shapes
    other = [c.shapes for c in calls[1:-1] or calls[:-1] if c.shapes != timed]
    if not other:
        return ""
    common = collections.Counter(other).most_common(1)[0][0]
    total = len(calls[1:-1] or calls[:-1])
    return (
        f"other shapes: {len(other)} of the program's {total} calls had {common}, the timed "
        f"call {timed} (another batch size)"
    )


def _faults(calls: list[CallSeen], measured: Measurements, gap_us: float) -> str:
    """The page faults per call of the two, when they explain the gap; else ""."""
    theirs = [c.faults for c in calls[1:] if c.faults is not None]
    if not theirs or not measured.page_faults or measured.page_fault_us <= 0:
        return ""
    program, timed = median(theirs), median(measured.page_faults)
    cost = abs(program - timed) * measured.page_fault_us
    if abs(program - timed) < MIN_FAULTS_PER_CALL or cost < EXPLAINS * gap_us:
        return ""
    why = (
        "the program's heap faulted its pages in (a fresh process)"
        if program > timed
        else "the heap hands its pages back and takes them again on every timed call"
    )
    return (
        f"page faults: the program's calls took {program:.0f} per call, the timed ones "
        f"{timed:.0f} (≈ {format_duration(cost)} at {measured.page_fault_us:.2g} µs each): {why}"
    )


def _wait(wait_us: Optional[float], gap_us: float, slower: bool) -> str:
    if not slower or wait_us is None or wait_us < EXPLAINS * gap_us:
        return ""
    return (
        f"waiting for a CPU: the timed calls waited {format_duration(wait_us)} per call "
        "(another process held the core)"
    )


def timing_note(
    calls: list[CallSeen],
    in_run_us: list[float],
    timed_us: float,
    timed_spread: float,
    wait_us: Optional[float],
    measured: Measurements,
) -> str:
    """The line (see the module docstring), or "" when the two agree within the noise."""
    if not differs(timed_us, in_run_us, timed_spread):
        return ""
    program = median(in_run_us)
    gap = abs(timed_us - program)
    head = (
        f"timed {format_duration(timed_us)} per call, {timed_us / program:.2g}× the in-run "
        f"median of {format_duration(program)}"
    )
    why = (
        _shapes(calls)
        or _faults(calls, measured, gap)
        or _wait(wait_us, gap, timed_us > program)
        or (
            "torchscope does not know why: the same shapes, and page faults per call do not "
            "explain it; rerun to see whether it holds"
        )
    )
    return f"{head}: {why}"
