"""``lazy-init``: CUDA context and library initialisation caught in the trace.

The first CUDA call in a process creates the context and loads modules: runtime calls of
seconds (``cudaDeviceGetStreamPriorityRange`` 29.9 s and ``cudaFree`` 6.0 s in
hta_alexnet_a100). It is a one-time cost: labelled, never the verdict, and kept out of the
steady-state findings.
"""

from __future__ import annotations

from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule


class LazyInit(Rule):
    """Label CUDA lazy initialisation."""

    id = "lazy-init"
    title = "CUDA lazy initialisation (one-time)"
    severity = "hint"
    source = "CUDA C Programming Guide, lazy loading and context creation"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return None if ctx.lazy_init else "no initialisation calls before or in the first step"

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        calls = [ctx.trace.runtime[i] for i in sorted(ctx.lazy_init)]
        total = sum(c.end - c.start for c in calls)
        longest = sorted(calls, key=lambda c: c.start - c.end)[:3]
        listed = ", ".join(f"{c.name} {format_duration(c.end - c.start)}" for c in longest)
        return [
            self.finding(
                f"initialisation: {len(calls)} CUDA setup calls take {format_duration(total)} "
                f"({listed}); "
                "a one-time cost of the first CUDA use in the process, not of each step: "
                "warm up before "
                "profiling",
                0.0,
                artefact=True,
                calls=len(calls),
                total_us=total,
            )
        ]


RULE = LazyInit()
