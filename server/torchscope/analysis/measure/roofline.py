"""The verdict's rates: memory-bound headlines, achieved/peak phrases and the GPU efficiency.

A CPU verdict whose costliest cause is ``bandwidth`` (``causes.py``) is ``memory-bound``: the
headline names the hottest copy-like op's GB/s, its share of the bandwidth, its arithmetic
intensity (that op's FLOPs per byte, not the whole call's) and the ridge point (peak FLOP/s /
bandwidth; below it no amount of compute can help). "below the ridge point" is written only
when it is below; at or above it the verdict is another one (``below_ridge``). GPU verdicts
keep their headline and gain the dominant op's efficiency.
"""

from __future__ import annotations

from dataclasses import replace

from ..formatting import format_duration, format_share
from ..index.context import Context
from ..results import Peaks, TopOp, Verdict
from .efficiency import Efficiency, Rates, name_rates
from .opclass import in_step
from .opclass.cost import RNG


def format_rate(gflops: float) -> str:
    """``165 GFLOP/s``, ``1.2 GFLOP/s``, ``312 TFLOP/s``."""
    if gflops >= 1000:
        return f"{gflops / 1000:.3g} TFLOP/s"
    return f"{gflops:.3g} GFLOP/s"


def format_gbps(gbps: float) -> str:
    return f"{gbps:.3g} GB/s"


def peak_phrase(peaks: Peaks, what: str) -> str:
    """``this CPU's measured peak`` / ``the A100's spec-sheet peak``."""
    if peaks.source == "measured":
        return f"this {what}'s measured peak"
    return f"{peaks.device or what}'s spec-sheet peak"


def bandwidth_phrase(peaks: Peaks) -> str:
    return "measured bandwidth" if peaks.source == "measured" else "spec-sheet bandwidth"


CACHE_RESIDENT_BYTES = 1 << 20
"""A copy-like op that moves under 1 MiB per call works in the CPU's caches (a core's L2 is
1-2 MiB on current x86 and Arm server parts, and the measured bandwidth is main memory's): the
bandwidth cannot be what limits it, so its time is its fixed cost per call."""


def dominant_memory_op(ctx: Context, eff: Efficiency) -> tuple[str, list[int]] | None:
    """The copy-like op name with the most time and its calls (None: no copy-like op;
    random-number ops are the ``rng`` cause's, not bandwidth's)."""
    by_name: dict[str, list[int]] = {}
    for i in eff.outer:
        if eff.work[i].kind == "memory" and eff.work[i].op_class != RNG:
            by_name.setdefault(ctx.trace.ops[i].name, []).append(i)
    if not by_name:
        return None
    name = max(by_name, key=lambda n: eff.totals(by_name[n]).time_us)
    return name, by_name[name]


def ridge_point(peaks: Peaks) -> float | None:
    """Peak FLOP/s over bandwidth, in FLOP/B: below it bytes, not arithmetic, bound an op
    (None: no matmul peak or no bandwidth)."""
    peak_flops = max(peaks.matmul_gflops.values(), default=0.0)
    bandwidth = peaks.bandwidth_gbps
    return peak_flops / bandwidth if peak_flops and bandwidth else None


FUSION_ADVICE = "fuse the chain: torch.compile, or fused kernels (see memory-bound-chain)"
"""What a memory-bound op (elementwise, reduction, copy) is told: move the bytes once."""

OPTIMIZER_ADVICE = (
    "the optimizer steps one tensor at a time: pass foreach=True (or fused=True) to the "
    "optimizer, then torch.compile"
)
"""What a memory-bound op inside ``Optimizer.step`` is told first: the multi-tensor or fused
step is one argument away, before a compile."""


def in_optimizer_step(ctx: Context, i: int) -> bool:
    """Op ``i`` runs inside an ``Optimizer.step#…`` annotation."""
    ann = ctx.nest.op_ann[i]
    anns = ctx.trace.annotations
    return ann >= 0 and in_step([anns[a].name for a in ctx.nest.annotation_chain(ann)])


def fusion_advice(ctx: Context, i: int) -> str:
    """The fix for memory-bound op ``i``: ``OPTIMIZER_ADVICE`` inside an optimizer step, else
    ``FUSION_ADVICE``."""
    return OPTIMIZER_ADVICE if in_optimizer_step(ctx, i) else FUSION_ADVICE


def memory_intensity(eff: Efficiency, calls: list[int]) -> float:
    """FLOPs per byte of the memory-bound ops a verdict names (their calls' totals)."""
    named = eff.totals(calls)
    return named.flops / named.bytes if named.bytes else 0.0


def below_ridge(eff: Efficiency, calls: list[int], peaks: Peaks | None) -> bool:
    """The named ops' arithmetic intensity is below the ridge point (True with no ridge to
    hold it to: an elementwise op's ~0.1 FLOP/B is below every machine's)."""
    ridge = ridge_point(peaks) if peaks is not None else None
    return ridge is None or memory_intensity(eff, calls) < ridge


def memory_verdict(
    ctx: Context, eff: Efficiency, verdict: Verdict, peaks: Peaks | None
) -> Verdict | None:
    """The memory-bound verdict, named after the copy-like op with the most time: its GB/s,
    share of the bandwidth, its arithmetic intensity (its own FLOPs over its own bytes, not the
    call's) and the ridge point it is below (None: no copy-like op with recorded shapes, no
    bandwidth to hold it to, or an intensity at or above the ridge: then bytes are not what
    bounds it, and the verdict is another one)."""
    bandwidth = peaks.bandwidth_gbps if peaks is not None else None
    if peaks is None or not bandwidth or verdict.cpu_us <= 0:
        return None
    dominant = dominant_memory_op(ctx, eff)
    if dominant is None:
        return None
    name, calls = dominant
    rates = eff.rates(eff.totals(calls))
    if rates.gbps is None or not below_ridge(eff, calls, peaks):
        return None
    intensity = memory_intensity(eff, calls)
    ridge = ridge_point(peaks)
    ridge_text = f", below the ridge point of {ridge:.3g} FLOP/B" if ridge else ""
    share = f", {format_share(rates.efficiency)}" if rates.efficiency is not None else ""
    headline = (
        f"memory-bound (CPU): {format_duration(verdict.cpu_us)} per call, {name} at "
        f"{format_gbps(rates.gbps)}{share} of {bandwidth_phrase(peaks)}; its arithmetic "
        f"intensity {intensity:.3g} FLOP/B{ridge_text}; {fusion_advice(ctx, calls[0])}"
    )
    return replace(verdict, id="memory-bound", headline=headline, efficiency=rates.efficiency)


def rate_suffix(rates: Rates, peaks: Peaks | None) -> str:
    """`` — 165 GFLOP/s, 81 % of this CPU's measured peak`` (only with a peak to hold it to:
    a trace analysed without one keeps its headline)."""
    if rates.gflops is None or rates.efficiency is None or peaks is None:
        return ""
    return (
        f" — {format_rate(rates.gflops)}, {format_share(rates.efficiency)} of "
        f"{peak_phrase(peaks, 'CPU')}"
    )


def judge_efficiency(ctx: Context, verdict: Verdict, ops: list[TopOp], eff: Efficiency) -> Verdict:
    """A GPU verdict with the dominant op's efficiency (a CPU verdict has its own from the
    causes, ``cause_verdict``)."""
    if not eff.time_us or not ops or not ctx.device_run:
        return verdict
    dominant = max(ops, key=lambda o: o.device_us).name
    return replace(verdict, efficiency=name_rates(ctx, eff, dominant).efficiency)


def achieved_text(
    gflops: float | None, gbps: float | None, efficiency: float | None, peaks: Peaks | None
) -> str:
    """An op's achieved rate for tables, hovers and inlays: ``165 GFLOP/s · 81 % of peak``,
    ``4.1 GB/s · 38 % of bandwidth`` (``spec-sheet peak`` for a trace from elsewhere); ""
    when nothing is known."""
    if gflops is not None:
        rate, against = format_rate(gflops), "peak"
    elif gbps is not None:
        rate, against = format_gbps(gbps), "bandwidth"
    else:
        return ""
    if efficiency is None or peaks is None:
        return rate
    source = "" if peaks.source == "measured" else "spec-sheet "
    return f"{rate} · {format_share(efficiency)} of {source}{against}"


def peaks_text(peaks: Peaks, device_kind: str) -> str:
    """``matmul float32 165 GFLOP/s, bandwidth 12.3 GB/s (measured on this CPU)``, or for a
    trace from elsewhere ``… (spec-sheet peak of NVIDIA A100…, not measured)``."""
    parts = [f"matmul {d} {format_rate(v)}" for d, v in sorted(peaks.matmul_gflops.items())]
    if peaks.bandwidth_gbps:
        parts.append(f"bandwidth {format_gbps(peaks.bandwidth_gbps)}")
    what = "GPU" if device_kind == "cuda" else "CPU"
    if peaks.source == "measured":
        where = f"measured on this {what}"
    else:
        where = f"spec-sheet peak of {peaks.device or 'this ' + what}, not measured"
    return f"{', '.join(parts)} ({where})"
