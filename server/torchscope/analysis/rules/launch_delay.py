"""``launch-delay``: the device waited more than 100 µs for a kernel after its launch began.

HTA's kernel launch statistics flag launch delays (launch call start → kernel start) above
100 µs. A long delay behind a busy device is just queueing; we count only kernels that open a
busy stretch on a device that was already idle when the launch call began: the whole delay
is then the launch path's (kernel queued behind running work or an event is not).
"""

from __future__ import annotations

from bisect import bisect_right

from ..context import Context
from ..formatting import format_duration
from ..report import Finding
from ._common import count_per_step, per_step_median, rt_location
from .base import LinkedKernelRule

LAUNCH_DELAY_US = 100.0
"""HTA's default threshold for a long launch delay."""

LAUNCH_DELAY_MIN_COST_US = 100.0
"""Device idle per step attributable to delayed launches below which we stay quiet."""


class LaunchDelay(LinkedKernelRule):
    """Kernels the device idled for, long after their launch started."""

    id = "launch-delay"
    title = "Long delay from launch to kernel start on an idle GPU"
    severity = "information"
    source = "HolisticTraceAnalysis: kernel launch statistics (launch delay > 100 µs)"

    def match(self, ctx: Context) -> list[Finding]:
        trace = ctx.trace
        delayed: list[tuple[int, float]] = []
        worst = (0.0, -1)
        runtime = trace.runtime
        for kernel, r, step in zip(trace.kernels, ctx.links.kernel_rt, ctx.step_of_kernel):
            if r < 0 or step < 0:
                continue  # not linked, or outside the steps
            delay = kernel[0] - runtime[r][0]
            if delay <= LAUNCH_DELAY_US:
                continue
            tl = ctx.timelines.get(trace.tracks[kernel.track].device)
            if tl is None:
                continue
            j = bisect_right(tl.starts, kernel.start) - 1
            if j < 0 or tl.starts[j] != kernel.start:
                continue  # the device was busy when the kernel started: queueing
            if j > 0 and tl.ends[j - 1] > trace.runtime[r].start:
                continue  # work was still running when the launch began: a dependency wait
            delayed.append((step, delay))
            if delay > worst[0]:
                worst = (delay, r)
        cost = per_step_median(ctx, delayed)
        if cost < LAUNCH_DELAY_MIN_COST_US or worst[1] < 0:
            return []
        file, line = rt_location(ctx, worst[1])
        return [
            self.finding(
                f"{count_per_step(len(delayed), ctx)} kernels per step start more than "
                f"{format_duration(LAUNCH_DELAY_US)} after their launch on an idle GPU (worst "
                f"{format_duration(worst[0])}), {format_duration(cost)} of "
                "idle device "
                "per step: the launch path itself is slow (lazy module loading, driver "
                "contention, many "
                "threads launching at once)",
                cost,
                line=line,
                file=file,
            )
        ]


RULE = LaunchDelay()
