"""Memory per line from ``[memory]`` events: bytes allocated, blocks alive, leaks, the peak.

With ``profile_memory=True`` the profiler writes one instant event per allocation (``Bytes``
> 0) and per free (< 0), with the block's address and device. Each event goes to the
innermost line marker (``torchscope:L<n>``) open on its thread at that moment — the line that
allocated; a free is paired with its allocation by (device, address) and counts for the
allocating line. Per step (one call of the function):

- *allocated*: the bytes and number of allocations a line made;
- *alive*: those still allocated after the call — not freed by the end of its step, after
  the call's locals and its (discarded) result were released;
- *retained*: those never freed at all in the trace — a line that retains bytes in every
  profiled call leaks;
- *peak*: the running sum of allocations minus frees from the step's start (the memory held
  before the call is the zero) up to the call's return; its maximum, and the line whose
  allocation reached it.

All numbers are per call: totals over the steps divided by their number (peaks: the median
step's, and the line that most steps peaked at).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import accumulate, compress, groupby, repeat
from operator import gt, itemgetter
from typing import Any

from ...ingest import LINE_MARKER_PREFIX
from ..index.columns import median
from ..index.context import Context, assign
from ..results import Measurements
from .lines import _shapes
from .parts import Allocation, DeviceMemory, DevicePeak, LineMemory, LineStats, MemorySummary

_TRACK = itemgetter(3)
_TS = itemgetter(0)

#: c10 ``DeviceType`` values the profiler writes in ``Device Type``.
DEVICE_NAMES = {0: "cpu", 1: "cuda"}

#: Largest allocations kept per line for the hover.
LARGEST_PER_LINE = 3


@dataclass(frozen=True)
class MemoryAnalysis:
    """Everything the ``[memory]`` events say; ``lines`` maps line → :class:`LineMemory`."""

    lines: dict[int, LineMemory]
    peaks: dict[str, DevicePeak]
    steps: int


def _innermost(
    ctx: Context, spans: list[Any], keep: list[bool] | None, times: Sequence[float]
) -> list[int]:
    """For each memory event, the index in ``spans`` of the innermost span (of those ``keep``
    marks; None: all) open on the event's thread at its time; -1 when none. A sweep per
    thread with a stack; the spans are split by thread with a stable sort (in C)."""
    events = ctx.trace.memory
    track_of = list(map(_TRACK, spans)).__getitem__
    chosen = range(len(spans)) if keep is None else compress(range(len(spans)), keep)
    by_track = {t: list(g) for t, g in groupby(sorted(chosen, key=track_of), track_of)}
    out = [-1] * len(events)
    pending: dict[int, list[int]] = {}
    for e, event in enumerate(events):
        pending.setdefault(event.track, []).append(e)
    for track, members in pending.items():
        order = by_track.get(track, [])
        starts = [spans[i].start for i in order]
        ends = [spans[i].end for i in order]
        stack: list[int] = []  # positions in order, innermost last
        k, n = 0, len(order)
        for e in members:  # events are in time order, spans sorted by start
            t = times[e]
            while k < n and starts[k] <= t:
                stack.append(k)
                k += 1
            # Ended spans leave from the top; one still open under them stays. After
            # this, the top (if any) is open at t: the innermost.
            while stack and ends[stack[-1]] < t:
                stack.pop()
            if stack:
                out[e] = order[stack[-1]]
    return out


def _marker_line(name: str) -> int | None:
    if not name.startswith(LINE_MARKER_PREFIX):
        return None
    tail = name[len(LINE_MARKER_PREFIX) :]
    return int(tail) if tail.isdigit() else None


def _freed_at(ctx: Context) -> list[float | None]:
    """When each allocation was freed (None: never in the trace), pairing by device and address."""
    events = ctx.trace.memory
    freed: list[float | None] = [None] * len(events)
    open_blocks: dict[tuple[int, int, int], int] = {}
    for i, ev in enumerate(events):
        key = (ev.device_type, ev.device_id, ev.addr)
        if ev.bytes > 0:
            open_blocks[key] = i
        elif ev.bytes < 0:
            j = open_blocks.pop(key, None)
            if j is not None:
                freed[j] = ev.ts
    return freed


def _call_ends(ctx: Context, n_steps: int) -> list[float]:
    """Where each step's call returned: the end of its last line marker (the step's end when
    the trace has no markers)."""
    ends = [s.end for s in ctx.steps]
    seen = [False] * n_steps
    anns = ctx.trace.annotations
    for a, ann in enumerate(anns):
        step = ctx.step_of_ann[a]
        if step < 0 or _marker_line(ann.name) is None:
            continue
        ends[step] = ann.end if not seen[step] else max(ends[step], ann.end)
        seen[step] = True
    return ends


@dataclass
class _LineAcc:
    alloc: float = 0.0
    allocs: int = 0
    alive: float = 0.0
    retained_by_step: dict[int, float] = field(default_factory=dict)
    blocks: Counter[tuple[int, str, str, str]] = field(default_factory=Counter)


def memory_analysis(ctx: Context) -> MemoryAnalysis | None:
    """Per-line memory and peaks; None when the trace holds no ``[memory]`` events."""
    if not ctx.trace.memory or not ctx.steps:
        return None
    return _analyse(ctx)


def _per_line(
    ctx: Context,
    acc: dict[tuple[int, str], _LineAcc],
    step_of: Sequence[int],
    line_of: list[int | None],
    op_of: list[int],
    call_end: list[float],
) -> None:
    """Add each allocation made on a line (within its step's call) to ``acc``."""
    trace = ctx.trace
    freed = _freed_at(ctx)
    for i, ev in enumerate(trace.memory):
        step, line = step_of[i], line_of[i]
        if step < 0 or line is None or ev.bytes <= 0 or ev.ts > call_end[step]:
            continue
        device = DEVICE_NAMES.get(ev.device_type, f"device{ev.device_type}")
        entry = acc.setdefault((line, device), _LineAcc())
        entry.alloc += ev.bytes
        entry.allocs += 1
        gone = freed[i]
        if gone is None or gone >= ctx.steps[step].end:
            entry.alive += ev.bytes
        if gone is None:
            entry.retained_by_step[step] = entry.retained_by_step.get(step, 0.0) + ev.bytes
        op = trace.ops[op_of[i]] if op_of[i] >= 0 else None
        entry.blocks[(ev.bytes, device, op.name if op else "", _shapes(op.args) if op else "")] += 1


def _analyse(ctx: Context) -> MemoryAnalysis:
    trace = ctx.trace
    events = trace.memory
    n_steps = len(ctx.steps)
    times = array("d", map(_TS, events))  # 8 bytes an event, not an int object and a slot
    step_of = assign(ctx.steps, times)
    lines_of = [_marker_line(a.name) for a in trace.annotations]
    call_end = _call_ends(ctx, n_steps)
    acc: dict[tuple[int, str], _LineAcc] = {}
    line_of: list[int | None] | None = None  # None: no line markers, only the peaks
    if any(line is not None for line in lines_of):
        marker = _innermost(ctx, trace.annotations, [ln is not None for ln in lines_of], times)
        line_of = [lines_of[m] if m >= 0 else None for m in marker]
        _per_line(ctx, acc, step_of, line_of, _innermost(ctx, trace.ops, None, times), call_end)
    return MemoryAnalysis(
        lines=_line_memory(acc, n_steps),
        peaks=_peaks(ctx, times, step_of, line_of, call_end),
        steps=n_steps,
    )


def _line_memory(acc: dict[tuple[int, str], _LineAcc], n_steps: int) -> dict[int, LineMemory]:
    devices: dict[int, dict[str, DeviceMemory]] = {}
    blocks: dict[int, Counter[tuple[int, str, str, str]]] = {}
    for (line, device), entry in acc.items():
        retained = [entry.retained_by_step.get(s, 0.0) for s in range(n_steps)]
        devices.setdefault(line, {})[device] = DeviceMemory(
            alloc_bytes=entry.alloc / n_steps,
            allocs=entry.allocs / n_steps,
            alive_bytes=entry.alive / n_steps,
            retained_bytes=sum(retained) / n_steps,
            leaks_every_call=n_steps >= 2 and all(r > 0 for r in retained),
        )
        blocks.setdefault(line, Counter()).update(entry.blocks)
    out: dict[int, LineMemory] = {}
    for line, per_device in devices.items():
        largest = sorted(blocks[line].items(), key=lambda kv: (-kv[0][0], kv[0][2]))
        out[line] = LineMemory(
            device=dict(sorted(per_device.items())),
            largest=[
                Allocation(size, count / n_steps, device, op, shapes)
                for (size, device, op, shapes), count in largest[:LARGEST_PER_LINE]
            ],
        )
    return out


def _add_allocs(
    seen: tuple[array[float], array[int]],
    totals: Iterable[float],
    mine: list[int],
    allocs: bytearray,
    line_of: list[int | None] | None,
) -> None:
    """Append one run's running totals after its allocations (``allocs``: a byte per event
    of ``mine``) and their lines (-1: none) to ``seen``."""
    values, lines = seen
    values.extend(totals)
    if line_of is None:
        lines.extend(repeat(-1, allocs.count(1)))
    else:
        picked = compress(map(line_of.__getitem__, mine), allocs)
        lines.extend(-1 if ln is None else ln for ln in picked)


def _peaks(
    ctx: Context,
    times: Sequence[float],
    step_of: Sequence[int],
    line_of: list[int | None] | None,
    call_end: list[float],
) -> dict[str, DevicePeak]:
    """Per device: the median step's peak above the start of the call, and the line that
    reached the peak in most steps. The peak's line is the first allocation that brought the
    running total within 1 % of the step's maximum: a few bytes of scalars allocated after
    the large blocks do not move the peak to a later line."""
    # Per (device type, step): the running total after each allocation, in event order. The
    # events are in time order, so a step's come in runs (one, unless windows overlap), and
    # those after its call end are a run's tail; a running total is ``accumulate``.
    # (running totals after each allocation, their lines (-1: none)), as arrays: a trace
    # holds millions of allocations.
    history: dict[tuple[int, int], tuple[array[float], array[int]]] = {}
    running: dict[tuple[int, int], float] = {}
    events = ctx.trace.memory
    for step, group in groupby(range(len(events)), step_of.__getitem__):
        if step < 0:
            continue
        members = list(group)
        lo = members[0]
        hi = bisect_right(times, call_end[step], lo, members[-1] + 1)
        for t in {events[i].device_type for i in range(lo, hi)}:
            mine = [i for i in range(lo, hi) if events[i].device_type == t]
            sizes = [events[i].bytes for i in mine]
            totals = list(accumulate(sizes, initial=running.get((t, step), 0.0)))
            running[(t, step)] = totals[-1]
            allocs = bytearray(map(gt, sizes, repeat(0)))
            if any(allocs):
                seen = history.setdefault((t, step), (array("d"), array("i")))
                _add_allocs(seen, compress(totals[1:], allocs), mine, allocs, line_of)
    named = {t: DEVICE_NAMES.get(t, f"device{t}") for t, _ in history}
    by_name = {(named[t], s): seen for (t, s), seen in history.items()}
    out: dict[str, DevicePeak] = {}
    for device in sorted(set(named.values())):
        per_step: list[tuple[float, int | None]] = []
        for s in range(len(ctx.steps)):
            values, lines = by_name.get((device, s), (array("d"), array("i")))
            top = max(values, default=0.0)
            first = (
                next((k for k, v in enumerate(values) if v >= 0.99 * top), -1) if top > 0 else -1
            )
            line = lines[first] if first >= 0 and lines[first] >= 0 else None
            per_step.append((top, line))
        counted = Counter(line for _, line in per_step if line is not None)
        common = counted.most_common(1)[0][0] if counted else None
        out[device] = DevicePeak(median([p for p, _ in per_step]), common)
    return out


def ran_us(m: Measurements) -> float:
    """The median time a call ran: its time less its wait for a CPU another process held, as
    the causes share it (``causes.cpu_costs``). The page faults' share is over it (a loaded run
    read 5 % of the call here and 33 % as the costliest cause, which then had no
    allocation-churn finding)."""
    call = median(m.call_us) if m.call_us else 0.0
    return call - (min(call, median(m.wait_us)) if m.wait_us else 0.0)


def page_fault_numbers(ctx: Context) -> tuple[float | None, float | None, float | None, float]:
    """(faults per call, their µs per call, their share of the call, µs per fault) from the
    timing pass; Nones when the worker did not count faults."""
    m = ctx.measurements
    if m is None or not m.page_faults:
        return None, None, None, 0.0
    faults = median(m.page_faults)
    cost = faults * m.page_fault_us
    call = ran_us(m)
    # ``getrusage`` counts the faults of every thread, the cost is calibrated on one: when
    # torch's intra-op threads fault in parallel, faults × cost is CPU time, not wall time,
    # and can exceed the call. The share of the call is therefore capped at 1.
    share = min(1.0, cost / call) if call > 0 else None
    return faults, cost, share, m.page_fault_us


def memory_summary(ctx: Context, analysis: MemoryAnalysis | None) -> MemorySummary | None:
    """The report's top-level ``memory``: present whenever the worker measured the call (page
    faults) or the trace recorded memory; None for a bare trace without either."""
    m = ctx.measurements
    if analysis is None and m is None:
        return None
    faults, cost, share, per_fault = page_fault_numbers(ctx)
    peaks = analysis.peaks if analysis is not None else {}
    main = "cuda" if "cuda" in peaks else ("cpu" if "cpu" in peaks else None)
    return MemorySummary(
        peak_bytes=peaks[main].peak_bytes if main else None,
        peak_line=peaks[main].peak_line if main else None,
        page_faults_per_call=faults,
        page_fault_us=cost,
        page_fault_share=share,
        fault_cost_us=per_fault if faults is not None else None,
        peak_device=main,
        peaks=dict(peaks),
        cuda=dict(m.cuda_memory) if m is not None else {},
    )


def attach_line_memory(lines: list[LineStats], analysis: MemoryAnalysis | None) -> list[LineStats]:
    """``lines`` with each line's :class:`LineMemory` set (unchanged without memory events)."""
    if analysis is None:
        return lines
    return [replace(s, memory=analysis.lines.get(s.line)) for s in lines]
