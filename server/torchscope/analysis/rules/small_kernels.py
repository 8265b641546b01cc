"""``small-kernels``: kernels that run shorter than the CPU call that launched them.

HTA's kernel launch statistics flag kernels shorter than their launch (``cudaLaunchKernel``
duration): the device finishes before the CPU can queue the next one, so it idles between
them. Fusing (``torch.compile``), CUDA graphs, or bigger work per kernel are the remedies.
"""

from __future__ import annotations

from ..context import Context
from ..formatting import format_duration, format_share
from ..link import is_launch
from ..report import Finding
from ._common import per_step_median
from .base import LinkedKernelRule

SMALL_KERNEL_MIN_SHARE = 0.2
"""At least a fifth of the step's kernels must be shorter than their launch."""

SMALL_KERNEL_MIN_COUNT = 10
"""…and at least 10 of them per step (two tiny kernels are not a pattern)."""


class SmallKernels(LinkedKernelRule):
    """Kernels shorter than their launch call."""

    id = "small-kernels"
    title = "Kernels shorter than their launch"
    severity = "information"
    source = "HolisticTraceAnalysis: kernel launch statistics (short kernels)"

    def match(self, ctx: Context) -> list[Finding]:
        trace = ctx.trace
        small: list[tuple[int, float]] = []
        count = [0] * len(ctx.steps)
        total = [0] * len(ctx.steps)
        runtime = trace.runtime
        single_launch: dict[str, bool] = {}  # launch call name → is it one kernel's launch?
        for kernel, r, step in zip(trace.kernels, ctx.links.kernel_rt, ctx.step_of_kernel):
            if r < 0 or step < 0:
                continue  # not linked, or outside the steps
            call = runtime[r]
            name = call[2]
            single = single_launch.get(name)
            if single is None:
                single = single_launch[name] = name != "cudaGraphLaunch" and is_launch(name)
            if not single:
                continue  # a graph launch is one call for many kernels
            total[step] += 1
            if kernel[1] - kernel[0] < call[1] - call[0]:
                count[step] += 1
                small.append((step, call[1] - call[0]))
        n = max(1, len(ctx.steps))
        per_step = sum(count) / n
        share = sum(count) / max(1, sum(total))
        if per_step < SMALL_KERNEL_MIN_COUNT or share < SMALL_KERNEL_MIN_SHARE:
            return []
        cost = per_step_median(ctx, small)
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
