"""``peak-near-limit``: the call's CUDA peak comes within 10 % of the memory that was free on
the device when it started — one larger batch away from an out-of-memory error."""

from __future__ import annotations

from ..formatting import format_bytes
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import without_cuda_memory
from .base import Rule

LIMIT_SHARE = 0.90
"""Peak at or above 90 % of the free memory at the start of the call."""


class PeakNearLimit(Rule):
    id = "peak-near-limit"
    title = "CUDA peak close to the free memory"
    severity = "error"
    source = "torch.cuda.mem_get_info, torch.cuda.max_memory_allocated"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        missing = without_cuda_memory(measured)
        if missing is not None:
            return missing
        m = ctx.measurements
        if m is None or not m.cuda_memory.get("free_bytes_at_start"):
            return "free device memory at the start was not measured"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        analysis = measured.memory
        assert analysis is not None and ctx.measurements is not None
        peak = analysis.peaks["cuda"]
        free = float(ctx.measurements.cuda_memory["free_bytes_at_start"])
        if peak.peak_bytes < LIMIT_SHARE * free:
            return []
        return [
            self.finding(
                f"the call's CUDA peak of {format_bytes(peak.peak_bytes)} (at line "
                f"{peak.peak_line}) is {peak.peak_bytes / free * 100:.0f} % of the "
                f"{format_bytes(free)} free when it started: a slightly larger input will run "
                "out of memory. Free temporaries early (`del`), use in-place ops, a smaller "
                "batch or activation checkpointing.",
                0.0,
                line=peak.peak_line,
                peak_bytes=peak.peak_bytes,
                free_bytes=free,
            )
        ]


RULE = PeakNearLimit()
