"""``low-efficiency-gemm``: a GEMM under 30 % of the device's matmul peak, and why.

Grouped by (op, input shapes, dtype): each math op's (GEMM, convolution, attention:
``opclass.MATH``) achieved GFLOP/s against the calibrated (or, for a trace from elsewhere,
spec-sheet) peak of its dtype. The likely cause is named by the op's class
(``measure/slow_math``): for a GEMM a thin matrix, a head size beside a softmax (sdpa),
dimensions not multiples of 8 in fp16/bf16 on a GPU, fp32 without TF32, matrices too small; for
a convolution its groups, channel counts, batch and layout (``channels_last``,
``cudnn.benchmark``); for attention the kernel's head size and dtype.
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.context import Context
from ..measure.efficiency import missing_peak
from ..measure.roofline import format_rate, peak_phrase
from ..measure.slow_math import MIN_GEMM_FLOPS, input_dims, likely_cause
from ..measure.stages import Metrics
from ..results import Finding
from ._common import op_location
from .base import Rule

LOW_EFFICIENCY = 0.30
"""Under 30 % of peak: a well-shaped large GEMM reaches 60-90 % on CPUs and GPUs alike."""

MIN_SHARE = 0.05
"""Only GEMMs that take at least 5 % of the step: a tiny GEMM is always far from peak and
never what the step waits for."""


class LowEfficiencyGemm(Rule):
    """GEMMs far below the matmul peak."""

    id = "low-efficiency-gemm"
    title = "GEMM far below this device's matmul peak"
    severity = "information"
    source = "roofline model; calibrated peak (worker/calibrate.py) or vendor spec sheet"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        eff = measured.efficiency
        if eff.peaks is None:
            return missing_peak(ctx)
        if not any(w.kind == "gemm" for w in eff.work.values()):
            return "no GEMM with recorded shapes (profile with record_shapes=True)"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        eff = measured.efficiency
        ops = ctx.trace.ops
        groups: dict[tuple[str, str, str], list[int]] = {}
        for i in eff.time_us:
            w = eff.work[i]
            if w.kind == "gemm" and w.flops >= MIN_GEMM_FLOPS:
                key = (ops[i].name, repr(input_dims(ops[i].args)), eff.peak_key.get(i, w.dtype))
                groups.setdefault(key, []).append(i)
        steps = max(1, len(ctx.steps))
        step_us = sum(s.wall_us for s in measured.steps) / steps if measured.steps else 0.0
        findings: list[Finding] = []
        for (name, _, peak_key), idx in groups.items():
            totals = eff.totals(idx)
            rates = eff.rates(totals)
            per_step = totals.time_us / steps
            if rates.efficiency is None or rates.gflops is None or eff.peaks is None:
                continue
            if rates.efficiency >= LOW_EFFICIENCY or per_step < MIN_SHARE * step_us:
                continue
            dims = input_dims(ops[idx[0]].args)
            shapes = " × ".join(str(d) for d in dims)
            dtype = eff.work[idx[0]].dtype
            peak = eff.peaks.matmul_gflops[peak_key]
            file, line = op_location(ctx, idx[0])
            cause = likely_cause(ctx, eff, idx[0])
            findings.append(
                self.finding(
                    f"{name} {shapes} ({dtype}) runs at {format_rate(rates.gflops)}, "
                    f"{format_share(rates.efficiency)} of "
                    f"{peak_phrase(eff.peaks, 'GPU' if ctx.device_run else 'CPU')} "
                    f"({format_rate(peak)}), {format_duration(per_step)} per step; likely "
                    f"cause: {cause}",
                    per_step * (1.0 - rates.efficiency),
                    line=line,
                    file=file,
                    gflops=rates.gflops,
                    efficiency=rates.efficiency,
                    peak_gflops=peak,
                    shapes=dims,
                    dtype=dtype,
                )
            )
        return findings


RULE = LowEfficiencyGemm()
