"""``gpu-idle``: large device gaps inside a step that no other finding explains.

Gaps under DataLoader ``__next__`` belong to ``dataloader``, gaps while the CPU is blocked in
a synchronising call to ``sync``/``pageable-copy``, gaps under profiler overhead events
(``Activity Buffer Request``) to ``profiler-buffer``; what is left is the device waiting for the
CPU to do something else: Python work, host-side preprocessing, logging.
"""

from __future__ import annotations

from ..context import Context
from ..formatting import format_duration, format_share
from ..intervals import Timeline
from ..metrics import cpu_index, is_dataloader, median
from ..report import Finding
from .base import Rule

GPU_IDLE_MIN_GAP_SHARE = 0.05
"""A gap counts when it is ≥ 5 % of its step…"""

GPU_IDLE_MIN_GAP_US = 50.0
"""…and ≥ 50 µs (shorter gaps are launch latency, see small-kernels)."""

EXPLAINED_SHARE = 0.5
"""A gap at least half covered by DataLoader or a blocking call is explained elsewhere."""


class GpuIdle(Rule):
    """Unexplained device idle gaps inside steps."""

    id = "gpu-idle"
    title = "GPU idle inside the step"
    source = (
        "HolisticTraceAnalysis idle time breakdown; TensorBoard profiler plugin (GPU utilisation)"
    )

    def skip(self, ctx: Context) -> str | None:
        if ctx.timeline() is None:
            return "no device activity recorded"
        return None

    def match(self, ctx: Context) -> list[Finding]:
        timeline = ctx.timeline()
        assert timeline is not None
        trace = ctx.trace
        explained = Timeline(
            [(a.start, a.end) for a in trace.annotations if is_dataloader(a.name)]
            + [(r.start, r.end) for r, b in zip(trace.runtime, ctx.blocking) if b]
            + [(trace.runtime[i].start, trace.runtime[i].end) for i in ctx.flush]
            + [(o.start, o.end) for o in trace.overhead]
        )
        index = cpu_index(ctx)
        totals = [0.0] * len(ctx.steps)
        largest: tuple[float, float, int] = (0.0, 0.0, -1)
        for k, step in enumerate(ctx.steps):
            wall = step.wall_us
            for a, b in timeline.gaps(step.start, step.end):
                dur = b - a
                if dur < GPU_IDLE_MIN_GAP_US or dur < GPU_IDLE_MIN_GAP_SHARE * wall:
                    continue
                if explained.busy(a, b) >= EXPLAINED_SHARE * dur:
                    continue
                totals[k] += dur
                if dur > largest[0]:
                    largest = (dur, a, k)
        cost = median(totals)
        if cost <= 0 or largest[2] < 0:
            return []
        dur, start, k = largest
        under = index.at(start + dur / 2)
        file, line = index.source(ctx, start + dur / 2)
        wall = median([s.wall_us for s in ctx.step_metrics])
        what = f" while the CPU runs {under}" if under else " while the CPU records no op"
        return [
            self.finding(
                f"the GPU sits idle {format_duration(cost)} per step "
                f"({format_share(cost / wall if wall else 0)}) "
                f"in gaps of ≥ {format_share(GPU_IDLE_MIN_GAP_SHARE)} of a step; the largest, "
                f"{format_duration(dur)} at +{format_duration(start - ctx.steps[k].start)} in "
                f"{ctx.steps[k].name}, "
                f"is{what}",
                cost,
                line=line,
                file=file,
                step=ctx.steps[k].name,
                largest_gap_us=dur,
                under=under,
            )
        ]


RULE = GpuIdle()
