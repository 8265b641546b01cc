"""``profiler-flush``: the long ``cudaDeviceSynchronize`` at the end of the active window.

Kineto synchronises the device when the window closes, to collect its activity. It is the
profiler's, never the user's code, so it is excluded from every step number and verdict. A
flush much longer than the device work it waits for means the CPU ran far ahead of a nearly
idle device: an overhead-bound symptom.
"""

from __future__ import annotations

from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

FLUSH_TINY_WORK_RATIO = 0.1
"""Device busy under 10 % of the flush: the flush waited for almost nothing."""


class ProfilerFlush(Rule):
    """Recognise the profiler's final flush as an artefact."""

    id = "profiler-flush"
    title = "Profiler flush at the end of the window (not your code)"
    severity = "hint"
    source = "Hugging Face torch.profiler guide, trace reading cheatsheet"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return None if ctx.flush else "no end-of-window cudaDeviceSynchronize found"

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        out: list[Finding] = []
        timeline = ctx.timeline()
        for r in sorted(ctx.flush):
            call = ctx.trace.runtime[r]
            dur = call.end - call.start
            busy = timeline.busy(call.start, call.end) if timeline is not None else 0.0
            text = (
                f"the final {call.name} ({format_duration(dur)}) is the profiler collecting device "
                "activity when the window closes; it is not part of any step"
            )
            if dur > 0 and busy < FLUSH_TINY_WORK_RATIO * dur and dur >= 100.0:
                text += (
                    f"; the device was busy only {format_duration(busy)} of it "
                    "(the CPU ran ahead of an idle GPU)"
                )
            out.append(self.finding(text, 0.0, artefact=True, flush_us=dur, device_busy_us=busy))
        return out


RULE = ProfilerFlush()
