"""``leak``: memory alive after the call grows across the profiled calls — some line's
allocations survive every call and are never freed (a tensor appended to a module-level list,
a cache without a bound, a graph kept alive through ``loss`` history)."""

from __future__ import annotations

from ..formatting import format_bytes
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule


class Leak(Rule):
    id = "leak"
    title = "Memory grows with every call"
    source = "PyTorch memory snapshot docs (memory that is never freed); memray leak reports"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if measured.memory is None:
            return "no memory events (profile with --memory)"
        if len(ctx.steps) < 2:
            return "needs at least two profiled calls"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        analysis = measured.memory
        assert analysis is not None
        out: list[Finding] = []
        for line, memory in sorted(analysis.lines.items()):
            for device, numbers in memory.device.items():
                if not numbers.leaks_every_call:
                    continue
                grown = numbers.retained_bytes * analysis.steps
                out.append(
                    self.finding(
                        f"line {line} keeps {format_bytes(numbers.retained_bytes)} on {device} "
                        f"alive after every call (+{format_bytes(grown)} over "
                        f"{analysis.steps} calls) and never frees it: something holds a "
                        "reference across calls (a module-level list, a cache, a tensor that "
                        "keeps its autograd graph). Store `.detach()`ed or `.item()` values, or "
                        "bound the cache.",
                        0.0,
                        line=line,
                        device=device,
                        bytes_per_call=numbers.retained_bytes,
                    )
                )
        return out


RULE = Leak()
