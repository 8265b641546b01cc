"""``heavy-kernel``: kernels launched after ``cudaOccupancyMaxActiveBlocksPerMultiprocessor``.

The guide's cheatsheet: that occupancy query right before a launch marks an adaptively
launched kernel (cuBLAS/cuDNN GEMMs and convolutions pick their grid from it). This is a label
for the hover, not a problem, so it carries no cost.
"""

from __future__ import annotations

from itertools import compress
from operator import itemgetter

from ..context import Context
from ..formatting import format_duration
from ..link import is_launch
from ..report import Finding
from ._common import count_per_step, per_step_median, rt_location
from .base import Rule

MAX_HEAVY_KERNELS = 5
"""Distinct heavy kernels listed (by device time)."""

OCCUPANCY_QUERY = "cudaOccupancyMaxActiveBlocksPerMultiprocessor"

_NAME = itemgetter(2)


def _queries(ctx: Context) -> set[str]:
    """The distinct runtime call names that are occupancy queries (one test per name, not
    per call)."""
    return {n for n in set(map(_NAME, ctx.trace.runtime)) if n.startswith(OCCUPANCY_QUERY)}


class HeavyKernel(Rule):
    """Adaptively launched GEMM/conv kernels."""

    id = "heavy-kernel"
    title = "Heavy kernel (adaptive launch: GEMM or convolution)"
    severity = "hint"
    source = "Hugging Face torch.profiler guide, trace reading cheatsheet"

    def skip(self, ctx: Context) -> str | None:
        if not _queries(ctx):
            return "no cudaOccupancyMaxActiveBlocksPerMultiprocessor calls in the trace"
        return None

    def match(self, ctx: Context) -> list[Finding]:
        trace = ctx.trace
        kernels: dict[str, list[int]] = {}
        first_rt: dict[str, int] = {}
        runtime = trace.runtime
        n = len(runtime)
        queries = _queries(ctx)
        for i in compress(range(n), map(queries.__contains__, map(_NAME, runtime))):
            r = runtime[i]
            # The next call on the same thread (runtime is sorted by start).
            j = i + 1
            while j < n and runtime[j].track != r.track:
                j += 1
            if j >= n or not is_launch(runtime[j].name):
                continue
            for kind, k in ctx.links.rt_device.get(j, ()):
                if kind == "kernel" and ctx.step_of_kernel[k] >= 0:
                    kname = trace.kernels[k].name
                    kernels.setdefault(kname, []).append(k)
                    first_rt.setdefault(kname, j)
        ranked = sorted(
            kernels.items(),
            key=lambda kv: -sum(trace.kernels[k].end - trace.kernels[k].start for k in kv[1]),
        )
        out: list[Finding] = []
        for name, ks in ranked[:MAX_HEAVY_KERNELS]:
            dev = per_step_median(
                ctx,
                (
                    (ctx.step_of_kernel[k], trace.kernels[k].end - trace.kernels[k].start)
                    for k in ks
                ),
            )
            file, line = rt_location(ctx, first_rt[name])
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
