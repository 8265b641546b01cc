"""``small-kernels``: kernels that run shorter than the CPU call that launched them.

HTA's kernel launch statistics flag kernels shorter than their launch (``cudaLaunchKernel``
duration): the device finishes before the CPU can queue the next one, so it idles between
them. Fusing (``torch.compile``), CUDA graphs, or bigger work per kernel are the remedies.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import and_, eq, itemgetter, le, lt, sub

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import RT_LAUNCH, add_per_step, picker, runtime_kinds, step_slices
from .base import LinkedKernelRule

SMALL_KERNEL_MIN_SHARE = 0.2
"""At least a fifth of the step's kernels must be shorter than their launch."""

SMALL_KERNEL_MIN_COUNT = 10
"""…and at least 10 of them per step (two tiny kernels are not a pattern)."""

_END = itemgetter(1)


class SmallKernels(LinkedKernelRule):
    """Kernels shorter than their launch call."""

    id = "small-kernels"
    title = "Kernels shorter than their launch"
    severity = "information"
    source = "HolisticTraceAnalysis: kernel launch statistics (short kernels)"

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        runtime = trace.runtime
        count = [0] * len(ctx.steps)
        total = [0] * len(ctx.steps)
        costs = [0.0] * len(ctx.steps)  # per step: launch time of the small kernels
        kinds = runtime_kinds(ctx)  # a graph launch is one call for many kernels
        kernel_dur = ctx.durations(trace.kernels)
        call_start = ctx.starts(runtime)
        rts = ctx.links.kernel_rt
        # Per step slice, in C: the launch call of each linked kernel, whether it launches
        # a single kernel, whether the kernel ran shorter than the call.
        for k, lo, hi in step_slices(ctx, trace.kernels, ctx.step_of_kernel):
            rs: Sequence[int] = rts[lo:hi]
            durs: Sequence[float] = kernel_dur[lo:hi]
            if min(rs) < 0:  # some not linked (-1): leave them out
                linked = list(map(le, repeat(0), rs))
                rs, durs = list(compress(rs, linked)), list(compress(durs, linked))
            if not rs:
                continue
            pick = picker(rs)
            launch = list(map(sub, map(_END, pick(runtime)), pick(call_start)))
            shorter = map(lt, durs, launch)
            call_kinds = pick(kinds)
            singles = call_kinds.count(RT_LAUNCH)
            if singles < len(rs):  # some graph launches or other calls: leave them out
                shorter = map(and_, map(eq, call_kinds, repeat(RT_LAUNCH)), shorter)
            small = list(compress(launch, shorter))
            total[k] += singles
            count[k] += len(small)
            add_per_step(costs, k, small)
        n = max(1, len(ctx.steps))
        per_step = sum(count) / n
        share = sum(count) / max(1, sum(total))
        if per_step < SMALL_KERNEL_MIN_COUNT or share < SMALL_KERNEL_MIN_SHARE:
            return []
        cost = median(costs)
        return [
            self.finding(
                f"{per_step:.0f} kernels per step ({format_share(share)} of them) run shorter "
                "than the "
                f"call that launched them ({format_duration(cost)} of launch time per step): "
                "fuse them "
                "(torch.compile), capture with CUDA graphs, or give each kernel more work",
                cost,
                small_per_step=per_step,
                share=share,
            )
        ]


RULE = SmallKernels()
