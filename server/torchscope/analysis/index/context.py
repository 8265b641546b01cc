"""Everything computed once per trace and shared by metrics, verdict and rules.

Built by :func:`build_context`; rules only read it. Step membership is decided once here
(by start time inside the step's window) so that every number agrees on what "in step 3"
means.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import itemgetter, sub
from typing import Any, Callable, TypeVar

from ...ingest import Span, Trace
from ..measure.machine import LocalMachine, recorded_here
from ..results import Measurements
from .groups import Groups
from .intervals import Timeline
from .link import BLOCKING_COPY_CALLS, SYNC_CALLS, Links, is_copy_call, is_pageable, link
from .nesting import Nesting, build_nesting
from .segment import Step, find_steps
from .source import SourceMap

LAZY_INIT_MIN_US = 10_000.0
"""A CUDA setup call (see LAZY_INIT_CALLS) before or in the first step that takes ≥ 10 ms is
initialisation, not steady-state work: a normal ``cudaMalloc`` takes well under a millisecond,
while context creation and module loading take 0.1-30 s (hta_alexnet_a100:
``cudaDeviceGetStreamPriorityRange`` 29.9 s, ``cudaFree`` 6.0 s)."""

LAZY_INIT_CALLS = frozenset(
    {
        "cudaFree",
        "cudaMalloc",
        "cudaDeviceGetStreamPriorityRange",
        "cudaGetDeviceCount",
        "cudaGetDeviceProperties",
        "cudaSetDevice",
        "cudaDriverGetVersion",
        "cudaRuntimeGetVersion",
        "cudaStreamCreateWithPriority",
        "cudaStreamCreateWithFlags",
        "cudaHostAlloc",
        "cudaDeviceGetAttribute",
        "cudaGetDevice",
    }
)
"""Calls that trigger or belong to CUDA context and library initialisation."""


_DEVICE_SYNC_CALLS = frozenset({"cudaDeviceSynchronize", "hipDeviceSynchronize"})

_START = itemgetter(0)
_END = itemgetter(1)
_SECOND = itemgetter(1)
_NAME = itemgetter(2)
_TRACK = itemgetter(3)
T = TypeVar("T")


def _indices() -> array[int]:
    """An empty column of span indices (4 bytes each, where a list holds an 8-byte pointer to
    a 32-byte int for every index above 256; a list of spans never reaches 2**31: it would
    take over 100 GiB)."""
    return array("i")


def step_ranges(
    steps: list[Step], spans: list[Span], starts: Sequence[float] | None = None
) -> list[tuple[int, int]]:
    """For spans sorted by start (as normalise leaves every list), the slice ``[lo, hi)`` of
    each step's members: those starting inside its window."""
    if starts is None:
        starts = list(map(_START, spans))
    out: list[tuple[int, int]] = []
    for st in steps:
        lo = bisect_left(starts, st.start)
        out.append((lo, bisect_left(starts, st.end, lo)))
    return out


def assign(steps: list[Step], times: Sequence[float]) -> array[int]:
    """Index of the step whose window holds each time (-1 outside every step), as int32."""
    starts = [s.start for s in steps]
    ends = [s.end for s in steps]
    out = array("i", [-1]) * len(times)
    if not steps:
        return out
    for i, t in enumerate(times):
        k = bisect_right(starts, t) - 1
        if (k >= 0 and t < ends[k]) or (k >= 0 and t == ends[k] == starts[k]):
            out[i] = k
    return out


def _memo(cache: dict[Any, Any], key: Any, make: Callable[[], T]) -> T:
    """``cache[key]``, made by ``make`` the first time."""
    if key not in cache:
        cache[key] = make()
    found: T = cache[key]
    return found


def _starts(cache: dict[Any, Any], spans: list[Span]) -> array[float]:
    return _memo(cache, (id(spans), "starts"), lambda: array("d", map(_START, spans)))


def _ranges(cache: dict[Any, Any], steps: list[Step], spans: list[Span]) -> list[tuple[int, int]]:
    return _memo(
        cache, (id(spans), "ranges"), lambda: step_ranges(steps, spans, _starts(cache, spans))
    )


def _step_of(cache: dict[Any, Any], steps: list[Step], spans: list[Span]) -> array[int]:
    out = array("i", [-1]) * len(spans)
    for k, (lo, hi) in enumerate(_ranges(cache, steps, spans)):
        if hi > lo:
            out[lo:hi] = array("i", [k]) * (hi - lo)
    return out


@dataclass(frozen=True, eq=False)
class Context:
    """The trace's indexes, shared by every later stage: ``build_context`` makes it in one
    expression, and nothing assigns its fields after that (it is frozen). Stage results
    (:class:`~.stages.Metrics`) are passed explicitly; ``_columns`` holds memoised columns of
    the trace (:meth:`memo`), caches only."""

    trace: Trace
    nest: Nesting
    links: Links
    steps: list[Step]
    measurements: Measurements | None
    timelines: dict[int, Timeline]
    primary_device: int | None
    step_of_op: array[int]
    step_of_rt: array[int]
    step_of_ann: array[int]
    step_of_kernel: array[int]
    step_of_memcpy: array[int]
    step_of_memset: array[int]
    sources: SourceMap
    flush: set[int]
    """Runtime calls that are the profiler's end-of-window flush."""
    lazy_init: set[int]
    """Runtime calls that are CUDA lazy initialisation."""
    blocking: bytearray
    """Per runtime call: does it block the CPU until the device catches up? (a byte each)"""
    here: LocalMachine | None = None
    """This machine, when the trace was recorded on it (``machine.recorded_here``)."""
    _columns: dict[Any, Any] = field(default_factory=dict)

    def memo(self, key: Any, make: Callable[[], T]) -> T:
        """A column or index of the trace under ``key``, made by ``make`` once."""
        return _memo(self._columns, key, make)

    def memoised(self, key: Any) -> Any:
        """What ``memo`` holds under ``key`` (None: nothing made yet)."""
        return self._columns.get(key)

    def starts(self, spans: list[Span]) -> array[float]:
        """Start times of one of the trace's span lists (computed once per list), as doubles:
        8 bytes each, not a float object and a list slot (40)."""
        return _starts(self._columns, spans)

    def durations(self, spans: list[Span]) -> array[float]:
        """Durations of one of the trace's span lists (computed once per list), as doubles."""
        return self.memo(
            (id(spans), "durations"),
            lambda: array("d", map(sub, map(_END, spans), self.starts(spans))),
        )

    def ranges(self, spans: list[Span]) -> list[tuple[int, int]]:
        """Per step, the slice of ``spans`` (one of the trace's lists) starting in it."""
        return _ranges(self._columns, self.steps, spans)

    def ranges_hold_steps(self, spans: list[Span], step_of: Sequence[int]) -> bool:
        """Whether :meth:`ranges` of ``spans`` are exactly each step's members by
        ``step_of`` (the matching ``step_of_*``): true unless steps overlap, which lets
        per-step work run over slices. Checked once per list, in C."""
        return self.memo((id(spans), "ranges_hold_steps"), lambda: self._hold(spans, step_of))

    def _hold(self, spans: list[Span], step_of: Sequence[int]) -> bool:
        covered = 0
        for k, (lo, hi) in enumerate(self.ranges(spans)):
            if hi > lo and step_of[lo:hi].count(k) != hi - lo:
                return False
            covered += hi - lo
        # Each slice holds only its own step, so the slices are disjoint; they hold
        # every member when no span outside them has a step.
        return covered == len(step_of) - step_of.count(-1)

    def step_of(self, spans: list[Span]) -> array[int]:
        """Per span of one of the trace's lists, the index of its step (-1: in none), as
        int32: 4 bytes a span, where a list held an 8-byte pointer."""
        return _step_of(self._columns, self.steps, spans)

    def ops_by_name(self) -> dict[str, array[int]]:
        """Op name → indices of its calls inside the steps, in time order (built once; rules
        that look for a few op names use it instead of scanning every op)."""
        return self.memo("ops_by_name", self._ops_by_name)

    def _ops_by_name(self) -> dict[str, array[int]]:
        groups: defaultdict[str, array[int]] = defaultdict(_indices)
        ops = self.trace.ops
        for lo, hi in self.ranges(ops):
            for i, name in zip(range(lo, hi), map(_NAME, ops[lo:hi])):
                groups[name].append(i)
        return dict(groups)

    def op_kernels(self) -> Groups:
        """Innermost op → kernels its runtime calls launched (built on first use)."""
        return self.memo("op_kernels", self._op_kernels)

    def _op_kernels(self) -> Groups:
        rt_op = self.nest.rt_op + array("i", [-1])  # an unlinked kernel (-1) reads -1
        owner = array("i", map(rt_op.__getitem__, self.links.kernel_rt))
        return Groups(len(self.trace.ops), owner)

    @property
    def device_run(self) -> bool:
        """True when the trace recorded kernels, copies or memsets."""
        return self.trace.has_device_activity

    @property
    def ran_on_gpu(self) -> bool:
        """The traced program used a GPU: device activity, or runtime calls besides the
        profiler's own flush and lazy init (a CPU function profiled on a GPU machine has only
        those; a GPU program whose kernels were not recorded has its launches)."""
        trace = self.trace
        calls = len(trace.runtime) > len(self.flush) + len(self.lazy_init)
        return trace.has_device_activity or (bool(trace.devices) and calls)

    def timeline(self) -> Timeline | None:
        """The primary device's busy timeline."""
        if self.primary_device is None:
            return None
        return self.timelines.get(self.primary_device)

    def device_of(self, span: Span) -> int:
        """Device index of a device-side span."""
        return self.trace.tracks[span.track].device

    def copy_of(self, r: int) -> list[Span]:
        """The memcpy spans launched by runtime call ``r``."""
        return _copies_of(self.trace, self.links, r)

    def is_artefact(self, r: int) -> bool:
        """Profiler flush or lazy initialisation: never the user's steady-state cost."""
        return r in self.flush or r in self.lazy_init


def _find_flush(trace: Trace, nest: Nesting, steps: list[Step], names: list[str]) -> set[int]:
    """The profiler's final ``cudaDeviceSynchronize``: outside any op, after the last step's
    CPU work (Kineto calls it when the active window closes to collect device activity).
    ``names``: the runtime calls' names."""
    flush: set[int] = set()
    if not trace.runtime:
        return flush
    last_end = steps[-1].end if steps else -math.inf
    rt_op = nest.rt_op
    candidates = [
        i
        for i in compress(range(len(names)), map(_DEVICE_SYNC_CALLS.__contains__, names))
        if rt_op[i] < 0
    ]
    if not candidates:
        return flush
    latest = max(candidates, key=lambda i: trace.runtime[i].start)
    last_op_start = trace.ops[-1].start if trace.ops else -math.inf  # ops are sorted by start
    if trace.runtime[latest].start >= last_end or last_op_start < trace.runtime[latest].end:
        flush.add(latest)
    return flush


def _find_lazy_init(trace: Trace, steps: list[Step], starts: Sequence[float]) -> set[int]:
    """Setup calls of ≥ LAZY_INIT_MIN_US before the end of the first step (``starts``: the
    runtime calls' start times)."""
    limit = steps[0].end if steps else math.inf
    runtime = trace.runtime
    stop = bisect_left(starts, limit)
    return {
        i
        for i in range(stop)
        if runtime[i].name in LAZY_INIT_CALLS
        and runtime[i].end - runtime[i].start >= LAZY_INIT_MIN_US
    }


def _timelines(trace: Trace) -> tuple[dict[int, Timeline], int | None]:
    """Busy timeline per device, and the device with the most device time (``None``: none).

    The (start, end) pairs are built in C; one device is the usual case."""
    device_of_track = [t.device for t in trace.tracks]
    per_device: dict[int, list[tuple[float, float]]] = {}
    for spans in (trace.kernels, trace.memcpys, trace.memsets):
        pairs = list(zip(map(_START, spans), map(_END, spans)))
        devices = list(map(device_of_track.__getitem__, map(_TRACK, spans)))
        for d in set(devices):
            chosen = (
                pairs
                if len(set(devices)) == 1
                else list(compress(pairs, [x == d for x in devices]))
            )
            per_device.setdefault(d, []).extend(chosen)
    timelines = {d: Timeline(iv) for d, iv in per_device.items()}
    device_time = {
        d: float(sum(map(sub, map(_SECOND, iv), map(_START, iv)))) for d, iv in per_device.items()
    }
    primary = max(device_time, key=lambda d: device_time[d]) if device_time else None
    return timelines, primary


def _copies_of(trace: Trace, links: Links, r: int) -> list[Span]:
    return [trace.memcpys[i] for kind, i in links.rt_device.get(r, ()) if kind == "memcpy"]


def _blocking(trace: Trace, links: Links, codes: bytearray) -> bytearray:
    """Blocking calls: by name (one decision per distinct name), then pageable DtoH copies."""
    blocking = bytearray(map((2).__eq__, codes))
    for i in compress(range(len(codes)), map((1).__eq__, codes)):
        blocking[i] = any(
            is_pageable(m.name) and "DtoH" in m.name for m in _copies_of(trace, links, i)
        )
    return blocking


def build_context(
    trace: Trace, measurements: Measurements | None, local: LocalMachine | None = None
) -> Context:
    """Nest, link and segment once, and the step of every span; ``local`` is this machine
    (see ``machine``)."""
    links = link(trace)
    names = list(map(_NAME, trace.runtime))
    kind = {
        n: (2 if n in SYNC_CALLS or n in BLOCKING_COPY_CALLS else 1 if is_copy_call(n) else 0)
        for n in set(names)
    }
    codes = bytearray(map(kind.__getitem__, names))  # a byte a call
    wanted = codes.copy()  # calls whose enclosing op matters: syncs, copies, launches
    deque(map(wanted.__setitem__, links.rt_device, repeat(1)), maxlen=0)  # a loop in C
    nest = build_nesting(trace, wanted)
    steps = find_steps(trace)
    timelines, primary = _timelines(trace)
    cache: dict[Any, Any] = {}  # the context's memoised columns, from the start

    def step_of(spans: list[Span]) -> array[int]:
        return _step_of(cache, steps, spans)

    return Context(
        trace=trace,
        nest=nest,
        links=links,
        steps=steps,
        measurements=measurements,
        here=local if recorded_here(trace.meta.get("host_name"), local) else None,
        timelines=timelines,
        primary_device=primary,
        step_of_op=step_of(trace.ops),
        step_of_rt=step_of(trace.runtime),
        step_of_ann=step_of(trace.annotations),
        step_of_kernel=step_of(trace.kernels),
        step_of_memcpy=step_of(trace.memcpys),
        step_of_memset=step_of(trace.memsets),
        sources=SourceMap(trace, nest),
        flush=_find_flush(trace, nest, steps, names),
        lazy_init=_find_lazy_init(trace, steps, _starts(cache, trace.runtime)),
        blocking=_blocking(trace, links, codes),
        _columns=cache,
    )
