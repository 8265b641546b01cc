"""``low-efficiency-gemm``: a GEMM under 30 % of the device's matmul peak, and why.

Grouped by (op, input shapes, dtype): each group's achieved GFLOP/s against the calibrated (or,
for a trace from elsewhere, spec-sheet) peak of its dtype. The likely cause is named from the
shapes: a thin matrix (a dimension under 64 gives the matrix units too little work per byte),
dimensions not multiples of 8 in fp16/bf16 on a GPU (tensor cores pad or fall back), fp32
without TF32 where the GPU has it, or matrices too small to fill the device.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..formatting import format_duration, format_share
from ..index.context import Context
from ..measure.efficiency import Efficiency, missing_peak
from ..measure.roofline import format_rate, peak_phrase
from ..measure.stages import Metrics
from ..results import Finding
from ._common import op_location
from .base import Rule

LOW_EFFICIENCY = 0.30
"""Under 30 % of peak: a well-shaped large GEMM reaches 60-90 % on CPUs and GPUs alike."""

MIN_SHARE = 0.05
"""Only GEMMs that take at least 5 % of the step: a tiny GEMM is always far from peak and
never what the step waits for."""

THIN = 64

SMALL = 512
"""A GEMM whose every dimension is under 512 is too small to keep a device's matrix units (or a
CPU's cores) busy: its fixed cost per call (packing, thread start-up, the launch) is a large part
of its time."""

MIN_GEMM_FLOPS = 1e6
"""GEMMs under 1 MFLOP per call (an 8×8 matmul is 1 kFLOP) are dispatch, not math: the verdict
(overhead-bound) already says what to do about them."""


def _dims(args: object) -> list[list[int]]:
    dims = args.get("Input Dims") if isinstance(args, Mapping) else None
    return [d for d in dims if isinstance(d, list) and d] if isinstance(dims, list) else []


def operand_sizes(name: str, args: object) -> list[int]:
    """The two matrix dimensions of each GEMM operand, from the recorded input shapes."""
    dims = _dims(args)
    operands = dims[1:3] if name in ("aten::addmm", "aten::baddbmm") else dims[:2]
    return [x for d in operands for x in d[-2:]]


def _cause(sizes: list[int], dtype: str, peak_key: str, ctx: Context, eff: Efficiency) -> str:
    if sizes and min(sizes) < THIN:
        return (
            f"a thin matrix (a dimension of {min(sizes)}): too little work per byte moved; "
            "batch several of them into one larger GEMM"
        )
    if ctx.device_run and dtype in ("float16", "bfloat16") and any(x % 8 for x in sizes):
        return "dimensions not multiples of 8: tensor cores pad or fall back; pad to 8/16"
    peaks = eff.peaks
    fp32 = ctx.device_run and dtype == "float32" and peak_key == "float32"
    if fp32 and peaks is not None and "tfloat32" in peaks.matmul_gflops:
        return "fp32 without tensor cores: torch.set_float32_matmul_precision('high')"
    if sizes and max(sizes) < SMALL:
        return "matrices too small to keep the device busy: batch them"
    return "check the thread count, the dtype and non-contiguous (transposed) inputs"


def is_small(name: str, args: object) -> bool:
    """Thin (a dimension under ``THIN``) or small (every dimension under ``SMALL``): the GEMM's
    work per call is too little to amortise its fixed cost, whatever the dtype or layout."""
    sizes = operand_sizes(name, args)
    return bool(sizes) and (min(sizes) < THIN or max(sizes) < SMALL)


def likely_cause(
    name: str, args: object, dtype: str, peak_key: str, ctx: Context, eff: Efficiency
) -> str:
    """Why one GEMM call is far from the peak, from its recorded shapes and dtype (the
    verdict's ``low-efficiency`` headline names the same cause as this rule)."""
    return _cause(operand_sizes(name, args), dtype, peak_key, ctx, eff)


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
                key = (ops[i].name, repr(_dims(ops[i].args)), eff.peak_key.get(i, w.dtype))
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
            dims = _dims(ops[idx[0]].args)
            shapes = " × ".join(str(d) for d in dims)
            dtype = eff.work[idx[0]].dtype
            peak = eff.peaks.matmul_gflops[peak_key]
            file, line = op_location(ctx, idx[0])
            cause = _cause(operand_sizes(name, ops[idx[0]].args), dtype, peak_key, ctx, eff)
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
