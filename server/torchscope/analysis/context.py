"""Everything computed once per trace and shared by metrics, verdict and rules.

Built by :func:`build_context`; rules only read it. Step membership is decided once here
(by start time inside the step's window) so that every number agrees on what "in step 3"
means.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from operator import itemgetter

from .intervals import Timeline
from .link import BLOCKING_COPY_CALLS, SYNC_CALLS, Links, is_copy_call, is_pageable, link
from .model import Span, Trace
from .nesting import Nesting, build_nesting
from .report import Measurements, StepMetrics, TopOp
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


_START = itemgetter(0)


def step_ranges(steps: list[Step], spans: list[Span]) -> list[tuple[int, int]]:
    """For spans sorted by start (as normalise leaves every list), the slice ``[lo, hi)`` of
    each step's members: those starting inside its window."""
    starts = list(map(_START, spans))
    out: list[tuple[int, int]] = []
    for st in steps:
        lo = bisect_left(starts, st.start)
        out.append((lo, bisect_left(starts, st.end, lo)))
    return out


def assign_sorted(steps: list[Step], spans: list[Span]) -> list[int]:
    """:func:`assign` for spans sorted by start: one slice per step, filled in C."""
    out = [-1] * len(spans)
    for k, (lo, hi) in enumerate(step_ranges(steps, spans)):
        if hi > lo:
            out[lo:hi] = [k] * (hi - lo)
    return out


def assign(steps: list[Step], times: list[float]) -> list[int]:
    """Index of the step whose window holds each time (-1 outside every step)."""
    starts = [s.start for s in steps]
    ends = [s.end for s in steps]
    out = [-1] * len(times)
    if not steps:
        return out
    for i, t in enumerate(times):
        k = bisect_right(starts, t) - 1
        if (k >= 0 and t < ends[k]) or (k >= 0 and t == ends[k] == starts[k]):
            out[i] = k
    return out


@dataclass
class Context:
    """The shared, read-only state of one analysis."""

    trace: Trace
    nest: Nesting
    links: Links
    steps: list[Step]
    measurements: Measurements | None
    timelines: dict[int, Timeline]
    primary_device: int | None
    step_of_op: list[int]
    step_of_rt: list[int]
    step_of_ann: list[int]
    step_of_kernel: list[int]
    step_of_memcpy: list[int]
    step_of_memset: list[int]
    sources: SourceMap
    flush: set[int] = field(default_factory=set)
    """Runtime calls that are the profiler's end-of-window flush."""
    lazy_init: set[int] = field(default_factory=set)
    """Runtime calls that are CUDA lazy initialisation."""
    blocking: list[bool] = field(default_factory=list)
    """Per runtime call: does it block the CPU until the device catches up?"""
    step_metrics: list[StepMetrics] = field(default_factory=list)
    top_ops: list[TopOp] = field(default_factory=list)
    op_calls: dict[str, int] = field(default_factory=dict)
    """Op name → calls inside the steps (filled with the op table; rules use it to skip)."""
    _op_kernels: dict[int, list[int]] | None = None
    _ops_by_name: dict[str, list[int]] | None = None

    def ops_by_name(self) -> dict[str, list[int]]:
        """Op name → indices of its calls inside the steps, in time order (built once; rules
        that look for a few op names use it instead of scanning every op)."""
        if self._ops_by_name is None:
            out: dict[str, list[int]] = {}
            ops = self.trace.ops
            for lo, hi in step_ranges(self.steps, ops):
                for i in range(lo, hi):
                    name = ops[i][2]
                    lst = out.get(name)
                    if lst is None:
                        out[name] = [i]
                    else:
                        lst.append(i)
            self._ops_by_name = out
        return self._ops_by_name

    _cpu_index: object = None

    def op_kernels(self) -> dict[int, list[int]]:
        """Innermost op → kernels its runtime calls launched (built on first use)."""
        if self._op_kernels is None:
            out: dict[int, list[int]] = {}
            rt_op = self.nest.rt_op
            for k, r in enumerate(self.links.kernel_rt):
                if r >= 0 and rt_op[r] >= 0:
                    out.setdefault(rt_op[r], []).append(k)
            self._op_kernels = out
        return self._op_kernels

    @property
    def device_run(self) -> bool:
        """True when the trace recorded kernels, copies or memsets."""
        return self.trace.has_device_activity

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
        return [
            self.trace.memcpys[i] for kind, i in self.links.rt_device.get(r, ()) if kind == "memcpy"
        ]

    def is_artefact(self, r: int) -> bool:
        """Profiler flush or lazy initialisation: never the user's steady-state cost."""
        return r in self.flush or r in self.lazy_init


def _find_flush(trace: Trace, nest: Nesting, steps: list[Step]) -> set[int]:
    """The profiler's final ``cudaDeviceSynchronize``: outside any op, after the last step's
    CPU work (Kineto calls it when the active window closes to collect device activity)."""
    flush: set[int] = set()
    if not trace.runtime:
        return flush
    last_end = steps[-1].end if steps else -math.inf
    candidates = [
        i
        for i, r in enumerate(trace.runtime)
        if r.name in ("cudaDeviceSynchronize", "hipDeviceSynchronize") and nest.rt_op[i] < 0
    ]
    if not candidates:
        return flush
    latest = max(candidates, key=lambda i: trace.runtime[i].start)
    last_op_start = max((o.start for o in trace.ops), default=-math.inf)
    if trace.runtime[latest].start >= last_end or last_op_start < trace.runtime[latest].end:
        flush.add(latest)
    return flush


def _find_lazy_init(trace: Trace, steps: list[Step], step_of_rt: list[int]) -> set[int]:
    out: set[int] = set()
    first_window_end = steps[0].end if steps else math.inf
    for i, r in enumerate(trace.runtime):
        if r.start > first_window_end or step_of_rt[i] > 0:
            continue
        if r.name in LAZY_INIT_CALLS and r.end - r.start >= LAZY_INIT_MIN_US:
            out.add(i)
    return out


def build_context(trace: Trace, measurements: Measurements | None) -> Context:
    """Nest, link, segment and assign once."""
    nest = build_nesting(trace)
    links = link(trace)
    steps = find_steps(trace, nest)

    per_device: dict[int, list[tuple[float, float]]] = {}
    device_time: dict[int, float] = {}
    tracks = trace.tracks
    for spans in (trace.kernels, trace.memcpys, trace.memsets):
        for s in spans:
            d = tracks[s.track].device
            lst = per_device.get(d)
            if lst is None:
                lst = per_device[d] = []
            lst.append((s.start, s.end))
            device_time[d] = device_time.get(d, 0.0) + (s.end - s.start)
    timelines = {d: Timeline(iv) for d, iv in per_device.items()}
    primary = max(device_time, key=lambda d: device_time[d]) if device_time else None

    step_of_rt = assign_sorted(steps, trace.runtime)
    ctx = Context(
        trace=trace,
        nest=nest,
        links=links,
        steps=steps,
        measurements=measurements,
        timelines=timelines,
        primary_device=primary,
        step_of_op=assign_sorted(steps, trace.ops),
        step_of_rt=step_of_rt,
        step_of_ann=assign_sorted(steps, trace.annotations),
        step_of_kernel=assign_sorted(steps, trace.kernels),
        step_of_memcpy=assign_sorted(steps, trace.memcpys),
        step_of_memset=assign_sorted(steps, trace.memsets),
        sources=SourceMap(trace, nest),
    )
    ctx.flush = _find_flush(trace, nest, steps)
    ctx.lazy_init = _find_lazy_init(trace, steps, step_of_rt)
    blocking = [False] * len(trace.runtime)
    for i, r in enumerate(trace.runtime):
        name = r.name
        if name in SYNC_CALLS or name in BLOCKING_COPY_CALLS:
            blocking[i] = True
        elif is_copy_call(name):
            blocking[i] = any(is_pageable(m.name) and "DtoH" in m.name for m in ctx.copy_of(i))
    ctx.blocking = blocking
    return ctx
