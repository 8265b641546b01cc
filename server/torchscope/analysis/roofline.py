"""The verdict's efficiency: the memory-bound class and achieved/peak for the dominant op.

A CPU run whose ops' bytes moved, divided by the bandwidth, explain at least
``MEMORY_BOUND_SHARE`` of the time per call, and more of it than their FLOPs divided by the
matmul peak do, is ``memory-bound``: the headline names the hottest such op's GB/s, its share of the
bandwidth, the arithmetic intensity (FLOPs per byte over those ops) and the ridge point (peak
FLOP/s / bandwidth; below it no amount of compute can help). Otherwise a ``compute-bound``
CPU headline gains the hottest op's GFLOP/s and its share of the peak. GPU verdicts keep their
headline and gain the dominant op's efficiency.
"""

from __future__ import annotations

from dataclasses import replace

from .context import Context
from .efficiency import Efficiency, Rates, name_rates
from .formatting import format_duration, format_share
from .results import Peaks, TopOp, Verdict

MEMORY_BOUND_SHARE = 0.2
"""Bytes / bandwidth must explain at least 20 % of the time per call (as each op of a
``memory-bound-chain``): the bandwidth is the machine's best copy (its fastest repetition), and
on a shared machine a copy-like op runs at a third of that while other jobs load the memory
bus, though moving fewer bytes (fusion, lower precision, in-place work) is still what would
make it faster. Work that is dispatch overhead instead (small tensors) explains a few per cent."""


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


def _memory_headline(
    ctx: Context, eff: Efficiency, verdict: Verdict, peaks: Peaks
) -> Verdict | None:
    """The memory-bound verdict, when bytes explain enough of the time (``MEMORY_BOUND_SHARE``)."""
    bandwidth = peaks.bandwidth_gbps
    if not bandwidth or verdict.cpu_us <= 0:
        return None
    steps = max(1, len(ctx.steps))
    outer = eff.totals(eff.outer)
    gemm = eff.totals([i for i in eff.outer if eff.work[i].kind == "gemm"])
    mem_us = outer.bytes / bandwidth / 1e3 / steps
    peak_flops = max(peaks.matmul_gflops.values(), default=0.0)
    comp_us = gemm.flops / peak_flops / 1e3 / steps if peak_flops else 0.0
    if mem_us < MEMORY_BOUND_SHARE * verdict.cpu_us or mem_us < comp_us:
        return None
    by_name: dict[str, list[int]] = {}
    for i in eff.outer:
        if eff.work[i].kind == "memory":
            by_name.setdefault(ctx.trace.ops[i].name, []).append(i)
    if not by_name:
        return None
    name = max(by_name, key=lambda n: eff.totals(by_name[n]).time_us)
    rates = eff.rates(eff.totals(by_name[name]))
    if rates.gbps is None:
        return None
    intensity = outer.flops / outer.bytes if outer.bytes else 0.0
    ridge = (peak_flops / bandwidth) if peak_flops else None
    ridge_text = f", below the ridge point of {ridge:.3g} FLOP/B" if ridge else ""
    share = f", {format_share(rates.efficiency)}" if rates.efficiency is not None else ""
    headline = (
        f"memory-bound (CPU): {format_duration(verdict.cpu_us)} per call, {name} at "
        f"{format_gbps(rates.gbps)}{share} of {bandwidth_phrase(peaks)}; arithmetic intensity "
        f"{intensity:.2g} FLOP/B{ridge_text}"
    )
    return replace(verdict, id="memory-bound", headline=headline, efficiency=rates.efficiency)


def _suffix(rates: Rates, peaks: Peaks | None) -> str:
    """`` — 165 GFLOP/s, 81 % of this CPU's measured peak`` (only with a peak to hold it to:
    a trace analysed without one keeps its headline)."""
    if rates.gflops is None or rates.efficiency is None or peaks is None:
        return ""
    return (
        f" — {format_rate(rates.gflops)}, {format_share(rates.efficiency)} of "
        f"{peak_phrase(peaks, 'CPU')}"
    )


def judge_efficiency(ctx: Context, verdict: Verdict, ops: list[TopOp], eff: Efficiency) -> Verdict:
    """The verdict with its efficiency, or the memory-bound verdict it turns out to be."""
    if not eff.time_us or not ops:
        return verdict
    if ctx.device_run:
        dominant = max(ops, key=lambda o: o.device_us).name
        return replace(verdict, efficiency=name_rates(ctx, eff, dominant).efficiency)
    if verdict.id != "compute-bound":
        return verdict
    if eff.peaks is not None:
        memory = _memory_headline(ctx, eff, verdict, eff.peaks)
        if memory is not None:
            return memory
    hottest = max(ops, key=lambda o: o.self_cpu_us).name
    rates = name_rates(ctx, eff, hottest)
    suffix = _suffix(rates, eff.peaks)
    if not suffix and rates.efficiency is None:
        return verdict
    return replace(verdict, headline=verdict.headline + suffix, efficiency=rates.efficiency)


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
