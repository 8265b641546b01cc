"""``profiler-buffer``: ``Activity Buffer Request`` (and CUPTI overhead) events are the
profiler fetching buffers for device activity records; they and the device gaps they cause
are artefacts of profiling, not of the code."""

from __future__ import annotations

from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule


class ProfilerBuffer(Rule):
    """Recognise profiler buffer requests as artefacts."""

    id = "profiler-buffer"
    title = "Profiler buffer requests (profiling artefact)"
    severity = "hint"
    source = "Hugging Face torch.profiler guide, trace reading cheatsheet"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        return None if ctx.trace.overhead else "no profiler overhead events in the trace"

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        spans = ctx.trace.overhead
        total = sum(s.end - s.start for s in spans)
        names = sorted({s.name for s in spans})
        return [
            self.finding(
                f"{len(spans)} profiler overhead events ({', '.join(names)}, "
                f"{format_duration(total)} in all): "
                "device gaps around them are the profiler's, not the code's",
                0.0,
                artefact=True,
                events=len(spans),
                total_us=total,
            )
        ]


RULE = ProfilerBuffer()
