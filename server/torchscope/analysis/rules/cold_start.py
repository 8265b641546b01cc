"""``cold-start``: the first call is much slower than the steady median (the guide: warm up
before measuring; the cost is real for code that runs once)."""

from __future__ import annotations

from ..formatting import format_duration
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from .base import Rule

COLD_START_RATIO = 3.0
"""First call ≥ 3× the steady median: beyond ordinary run-to-run noise (the guide's first
matmul call costs several times the steady one: allocator, cuBLAS handle, heuristics)."""

COLD_START_MIN_US = 1000.0
"""…and at least 1 ms slower, so a 3 µs → 10 µs first call does not earn a warning."""


class ColdStart(Rule):
    """First call much slower than the steady state."""

    id = "cold-start"
    title = "First call much slower than the steady state"
    severity = "information"
    source = "Hugging Face torch.profiler guide: warm up before measuring"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        m = ctx.measurements
        if m is None or not m.call_us:
            return "needs the worker's unprofiled timing (cold call and steady calls)"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        m = ctx.measurements
        assert m is not None
        steady = median(m.call_us)
        extra = m.cold_us - steady
        if steady <= 0 or m.cold_us < COLD_START_RATIO * steady or extra < COLD_START_MIN_US:
            return []
        return [
            self.finding(
                f"first call took {format_duration(m.cold_us)}, {m.cold_us / steady:.0f}× the "
                "steady "
                f"{format_duration(steady)}: allocator, library handles, lazy loading or "
                "compilation; "
                "warm up before timing, or count it if the code runs once",
                extra,
                once=True,
                cold_us=m.cold_us,
                median_us=steady,
            )
        ]


RULE = ColdStart()
