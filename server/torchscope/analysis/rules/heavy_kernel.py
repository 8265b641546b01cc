"""``heavy-kernel``: kernels launched after ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``.

The guide's cheatsheet: that occupancy query right before a launch marks an adaptively
launched kernel (cuBLAS/cuDNN GEMMs and convolutions pick their grid from it). This is a label
for the hover, not a problem, so it carries no cost.
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import eq, itemgetter, le

from ...ingest import Span
from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import (
    RT_GRAPH_LAUNCH,
    RT_LAUNCH,
    RT_QUERY,
    count_per_step,
    per_step_median,
    picker,
    positions,
    rt_location,
    runtime_kinds,
)
from .base import Rule

MAX_HEAVY_KERNELS = 5
"""Distinct heavy kernels listed (by device time)."""

_LAUNCHES = frozenset({RT_LAUNCH, RT_GRAPH_LAUNCH})

_KIND = itemgetter(0)
_INDEX = itemgetter(1)
_NAME = itemgetter(2)
_TRACK = itemgetter(3)


def _next_on_thread(runtime: list[Span], i: int) -> int:
    """Index of the first call after ``i`` on its thread (``len(runtime)`` when none)."""
    track = runtime[i][3]
    j = i + 1
    while j < len(runtime) and runtime[j][3] != track:
        j += 1
    return j


class HeavyKernel(Rule):
    """Adaptively launched GEMM/conv kernels."""

    id = "heavy-kernel"
    title = "Heavy kernel (adaptive launch: GEMM or convolution)"
    severity = "hint"
    source = "Hugging Face torch.profiler guide, trace reading cheatsheet"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if RT_QUERY not in runtime_kinds(ctx):
            return "no cudaOccupancyMaxActiveBlocksPerMultiprocessor calls in the trace"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        runtime = trace.runtime
        n = len(runtime)
        kinds = runtime_kinds(ctx)
        queries = positions(kinds, RT_QUERY)
        if queries and queries[-1] == n - 1:
            queries = queries[:-1]  # the last call: nothing follows it
        # The call after each query on the same thread: in C for the usual case where it is
        # the very next call, walked to for the others (runtime is sorted by start).
        after = [i + 1 for i in queries]
        query_track = list(map(_TRACK, picker(queries)(runtime)))
        after_track = list(map(_TRACK, picker(after)(runtime)))
        if query_track != after_track:
            after = [
                j if a == b else _next_on_thread(runtime, i)
                for i, j, a, b in zip(queries, after, query_track, after_track)
            ]
            after = [j for j in after if j < n]  # n: nothing follows on that thread
        is_launch_call = map(_LAUNCHES.__contains__, picker(after)(kinds))
        launches = compress(after, is_launch_call)
        # The device spans those launches issued, in launch order: the kernels in the steps.
        step_of_kernel = ctx.step_of_kernel
        issued = list(chain.from_iterable(map(ctx.links.rt_device.get, launches, repeat(()))))
        is_kernel = map(eq, map(_KIND, issued), repeat("kernel"))
        launched = list(compress(map(_INDEX, issued), is_kernel))
        launched = list(
            compress(launched, map(le, repeat(0), map(step_of_kernel.__getitem__, launched)))
        )
        kernels: dict[str, list[int]] = {}  # kernel name → those kernels, first seen first
        for k, kname in zip(launched, map(_NAME, map(trace.kernels.__getitem__, launched))):
            found = kernels.get(kname)
            if found is None:
                kernels[kname] = [k]
            else:
                found.append(k)
        durations = ctx.durations(trace.kernels)
        ranked = sorted(kernels.items(), key=lambda kv: -sum(map(durations.__getitem__, kv[1])))
        out: list[Finding] = []
        for name, ks in ranked[:MAX_HEAVY_KERNELS]:
            dev = per_step_median(
                ctx, zip(map(step_of_kernel.__getitem__, ks), map(durations.__getitem__, ks))
            )
            # The launch of its first kernel (rt_device and kernel_rt are inverses).
            file, line = rt_location(ctx, ctx.links.kernel_rt[ks[0]])
            short = name if len(name) <= 80 else name[:77] + "…"
            out.append(
                self.finding(
                    f"{short}: adaptively launched (occupancy query before "
                    "the launch), "
                    f"{format_duration(dev)} per step over {count_per_step(len(ks), ctx)} launches",
                    0.0,
                    line=line,
                    file=file,
                    kernel=name,
                    device_us=dev,
                )
            )
        return out


RULE = HeavyKernel()
