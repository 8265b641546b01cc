"""``launch-delay``: the device waited more than 100 µs for a kernel after its launch began.

HTA's kernel launch statistics flag launch delays (launch call start → kernel start) above
100 µs. A long delay behind a busy device is just queueing; we count only kernels that open a
busy stretch on a device that was already idle when the launch call began: the whole delay
is then the launch path's (kernel queued behind running work or an event is not).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from itertools import compress, repeat
from operator import lt

from ..formatting import format_duration
from ..index.context import Context
from ..measure.launch import launch_steps
from ..measure.stages import Metrics
from ..results import Finding
from ._common import (
    count_per_step,
    gap_lengths,
    per_step_median,
    picker,
    rt_location,
)
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

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        kernels = trace.kernels
        kernel_start = ctx.starts(kernels)
        device_of_track = [t.device for t in trace.tracks]
        # A kernel the device idled for opens a busy stretch, and the stretch before it
        # ended by the time its launch began: the idle gap before it is longer than the
        # delay, so longer than LAUNCH_DELAY_US. Such gaps are few (found in C), and the
        # kernels starting right after them are found by binary search: no test per kernel.
        opening: list[tuple[int, float]] = []  # (kernel, end of the stretch before it)
        for device, tl in ctx.timelines.items():
            if not tl.starts:
                continue
            long = map(lt, repeat(LAUNCH_DELAY_US), gap_lengths(ctx, tl))
            after_gap = list(compress(range(1, len(tl.starts)), long))
            begins = picker([0, *after_gap])(tl.starts)
            before = [-math.inf, *picker([j - 1 for j in after_gap])(tl.ends)]
            found = map(bisect_left, repeat(kernel_start), begins)
            for start, prev_end, i in zip(begins, before, found):
                while i < len(kernels) and kernel_start[i] == start:
                    if device_of_track[kernels[i][3]] == device:
                        opening.append((i, prev_end))
                    i += 1
        opening.sort()  # kernel order
        rts = ctx.links.kernel_rt
        call_start = ctx.starts(trace.runtime)
        step_of = launch_steps(ctx, kernels, "kernel")
        delayed: list[tuple[int, float]] = []
        worst = (0.0, -1)
        for i, prev_end in opening:
            step, r = step_of[i], rts[i]
            if step < 0 or r < 0:
                continue  # launched outside the steps, or not linked
            delay = kernel_start[i] - call_start[r]
            if delay <= LAUNCH_DELAY_US:
                continue
            if prev_end > call_start[r]:
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
