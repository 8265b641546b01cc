"""The verdict from the ranked causes (``causes.py``): its id and headline per cause.

CPU: the costliest cause names the verdict. ``dispatch``, ``threads`` and ``page-faults`` are
``overhead-bound`` (the headline says which overhead), ``rng`` is ``rng-bound`` (random numbers
drawn by a separate pass: dropout's mask; fused into sdpa or by ``torch.compile``),
``bandwidth`` is ``memory-bound`` (but
``overhead-bound (CPU, small tensors)`` when the op's data fits the caches:
``roofline.CACHE_RESIDENT_BYTES``), and
``compute`` is ``compute-bound`` only at an efficiency of at least ``COMPUTE_FLOOR``. Below it the
verdict names why the math is slow, from the numbers the findings measured: a thin or small GEMM
(``measure/slow_math.is_small``) is ``overhead-bound (CPU, small shapes)`` — its time is the
fixed cost per call, the guide's "too little work per call" — and a large one is
``low-efficiency`` (the intra-op threads, the dtype or the layout). The cause stays ``compute``:
the time is in the ops' bodies; the id says what kind of fix it needs. A GPU verdict keeps
its id (``verdict.device_verdict``: the first of its causes names it).
"""

from __future__ import annotations

from dataclasses import replace

from ..formatting import format_bytes, format_duration, format_share
from ..index.context import Context
from ..measure.efficiency import Efficiency, missing_peak, name_rates
from ..measure.opclass import is_memory_op
from ..measure.opclass.cost import RNG
from ..measure.roofline import (
    CACHE_RESIDENT_BYTES,
    FUSION_ADVICE,
    below_ridge,
    dominant_memory_op,
    format_rate,
    memory_verdict,
    peak_phrase,
    rate_suffix,
)
from ..measure.slow_math import is_small, likely_cause
from ..results import Peaks, StepMetrics, TopOp, Verdict
from .causes import CpuCosts, compute_efficiency, compute_floor, cpu_costs, ranked


def _ratio(slow: float, fast: float) -> str:
    return f"{slow / fast:.2g}× faster" if fast > 0 else "faster"


def _threads_headline(c: CpuCosts) -> str:
    one = c.one_thread_us if c.one_thread_us is not None else c.call_us - c.costs["threads"]
    return (
        f"overhead-bound (CPU threads): {format_duration(c.call_us)} per call; with 1 thread "
        f"{format_duration(one)} ({_ratio(c.call_us, one)})"
    )


def _faults_headline(c: CpuCosts) -> str:
    cost = c.costs["page-faults"]
    faults = f"{c.faults_per_call:.0f} page faults per call" if c.faults_per_call else "faults"
    return (
        f"overhead-bound (CPU page faults): {format_duration(c.call_us)} per call, {faults} ≈ "
        f"{format_duration(cost)} ({format_share(min(1.0, cost / c.run_us))})"
    )


RNG_ADVICE = (
    "fuse it: pass dropout_p to torch.nn.functional.scaled_dot_product_attention (the mask is "
    "drawn inside the kernel), or torch.compile"
)
"""What the ``rng`` cause is told: draw the random numbers inside a fused kernel."""


def _rng_headline(ctx: Context, eff: Efficiency, c: CpuCosts) -> str:
    """``rng-bound (CPU)``: the random-number op with the most time and its share."""
    by_name: dict[str, list[int]] = {}
    for i in eff.outer:
        if eff.work[i].op_class == RNG:
            by_name.setdefault(ctx.trace.ops[i].name, []).append(i)
    name = max(by_name, key=lambda n: eff.totals(by_name[n]).time_us) if by_name else "RNG ops"
    return (
        f"rng-bound (CPU): {format_duration(c.call_us)} per call, ~{_share_of(c, 'rng')} drawing "
        f"random numbers in {name} (dropout's mask: the generator's arithmetic, not memory "
        f"bandwidth); {RNG_ADVICE}"
    )


def _dispatch_headline(c: CpuCosts, share: float) -> str:
    return (
        f"overhead-bound (CPU): {format_duration(c.call_us)} per call, ~{format_share(share)} "
        f"dispatch ({c.ops_per_call:g} ops × {format_duration(c.dispatch_floor_us)})"
    )


def _top_gemm(eff: Efficiency) -> int | None:
    """The math op (GEMM, convolution, attention) with the most profiled time (None: none
    with recorded shapes)."""
    gemms = [i for i in eff.outer if eff.work[i].kind == "gemm"]
    return max(gemms, key=lambda i: eff.time_us.get(i, 0.0)) if gemms else None


def _why_inefficient(ctx: Context, eff: Efficiency, c: CpuCosts) -> str:
    """Why the compute is below the floor: the threads when one thread was faster, else the
    cause ``low-efficiency-gemm`` names from the dominant GEMM's shapes and dtype."""
    if c.costs["threads"] > 0 and c.one_thread_us is not None and c.one_thread_us < c.call_us:
        return (
            f"the intra-op threads: with 1 thread {format_duration(c.one_thread_us)} per call "
            f"({_ratio(c.call_us, c.one_thread_us)}); use torch.set_num_threads(1) for work "
            "this size"
        )
    top = _top_gemm(eff)
    if top is None:
        return "no GEMM with recorded shapes to say why"
    return likely_cause(ctx, eff, top)


def _small_shapes(ctx: Context, eff: Efficiency) -> bool:
    """The dominant math op is thin or small (``measure/slow_math.is_small``)."""
    top = _top_gemm(eff)
    return top is not None and is_small(ctx, eff, top)


def _compute_verdict(
    ctx: Context, eff: Efficiency, c: CpuCosts, hottest: str, base: Verdict
) -> Verdict:
    """``compute-bound`` at or above the floor (or with no peak to hold it to); below it
    ``overhead-bound`` for a small GEMM, else ``low-efficiency``, with the reason."""
    efficiency = compute_efficiency(eff, c)
    peaks = eff.peaks
    rates = name_rates(ctx, eff, hottest)
    head = f"{format_duration(c.call_us)} per call in {hottest}"
    if efficiency is None or peaks is None:
        suffix = rate_suffix(rates, peaks)
        if suffix:
            return replace(
                base,
                id="compute-bound",
                headline=f"compute-bound (CPU): {head}{suffix}",
                efficiency=rates.efficiency,
            )
        return _unknown_efficiency(ctx, eff, rates.gflops, head, base)
    floor = compute_floor("cpu", peaks.source)
    achieved = f"{format_rate(c.gemm_flops / c.run_us / 1e3)}, {format_share(efficiency)} of "
    achieved += peak_phrase(peaks, "CPU")
    if efficiency >= floor:
        return replace(
            base,
            id="compute-bound",
            headline=f"compute-bound (CPU): {head} — {achieved}",
            efficiency=efficiency,
        )
    # Below the floor: a small GEMM's time is its fixed cost per call (the guide's lesson:
    # too little work per call is overhead); a large one is slow math (dtype, layout, threads).
    small = _small_shapes(ctx, eff)
    vid, label = ("overhead-bound", "CPU, small shapes") if small else ("low-efficiency", "CPU")
    return replace(
        base,
        id=vid,
        headline=(
            f"{vid} ({label}): {head} — {achieved} (compute-bound needs "
            f"{format_share(floor)}): {_why_inefficient(ctx, eff, c)}"
        ),
        efficiency=efficiency,
    )


def _unknown_efficiency(
    ctx: Context, eff: Efficiency, gflops: float | None, head: str, base: Verdict
) -> Verdict:
    """No peak to hold the math to: not ``compute-bound`` (the issue's nanoGPT step read so
    at 0.52 GFLOP/s). A thin or small GEMM is still overhead (its shapes say so); otherwise
    ``compute-heavy``: the time is in the math, how well it runs is unknown."""
    rate = f" at {format_rate(gflops)}" if gflops else ""
    why = f"efficiency unknown: {missing_peak(ctx)}"
    if _small_shapes(ctx, eff):
        return replace(
            base,
            id="overhead-bound",
            headline=f"overhead-bound (CPU, small shapes): {head}{rate} — too little work per "
            f"call for the math to dominate; give each call more work ({why})",
        )
    return replace(base, id="compute-heavy", headline=f"compute-heavy (CPU): {head}{rate} — {why}")


def _share_of(c: CpuCosts, cause: str) -> str:
    """``62 %``: a cause's share of the call (``?`` for a call of no time)."""
    return format_share(min(1.0, c.costs[cause] / c.run_us)) if c.run_us > 0 else "?"


def _cache_resident(ctx: Context, eff: Efficiency, c: CpuCosts, base: Verdict) -> Verdict | None:
    """``overhead-bound (CPU, small tensors)`` when the costliest copy-like op moves under
    ``CACHE_RESIDENT_BYTES`` per call: its data sits in the caches, so main-memory bandwidth
    is not what it waits for; its fixed cost per call is (None: a larger op)."""
    dominant = dominant_memory_op(ctx, eff)
    if dominant is None:
        return None
    name, calls = dominant
    moved = max(eff.work[i].bytes for i in calls)
    if moved <= 0 or moved >= CACHE_RESIDENT_BYTES:
        return None
    share = _share_of(c, "bandwidth")
    return replace(
        base,
        id="overhead-bound",
        headline=(
            f"overhead-bound (CPU, small tensors): {format_duration(c.call_us)} per call, "
            f"~{share} in {name} on {format_bytes(moved)} per call — cache-resident, so not "
            "memory bandwidth: its fixed cost per call dominates; give each call more work, or "
            "fuse the chain (torch.compile)"
        ),
    )


def _memory(ctx: Context, eff: Efficiency, c: CpuCosts, base: Verdict) -> Verdict | None:
    """``memory-bound``: with the op's GB/s where a bandwidth is known; a cache-resident op
    is overhead (``_cache_resident``); ops at or above the ridge point are not bound by bytes
    (None: the compute verdict judges them)."""
    small = _cache_resident(ctx, eff, c, base)
    if small is not None:
        return small
    dominant = dominant_memory_op(ctx, eff)
    if dominant is not None and not below_ridge(eff, dominant[1], eff.peaks):
        return None
    found = memory_verdict(ctx, eff, base, eff.peaks)
    if found is not None:
        return found
    share = _share_of(c, "bandwidth")
    return replace(
        base,
        id="memory-bound",
        headline=(
            f"memory-bound (CPU): {format_duration(c.call_us)} per call, ~{share} in ops that "
            f"move bytes (elementwise, copies); {FUSION_ADVICE}"
        ),
    )


WAIT_NOTE_SHARE = 0.10
"""The headline says how much of the call waited for a CPU from this share of it on."""


def _wait_note(c: CpuCosts) -> str:
    """``; 71 % of it waiting for a CPU (another process held the core)``, or ''."""
    if c.call_us <= 0 or c.wait_us < WAIT_NOTE_SHARE * c.call_us:
        return ""
    share = format_share(c.wait_us / c.call_us)
    return f"; {share} of it waiting for a CPU (another process held the core)"


def _hottest_math(ops: list[TopOp]) -> str:
    """The op the ``compute`` verdict names: the one with the most self time that is not
    copy-like (``work.is_memory_op``: an elementwise, RNG or reduction op is the bandwidth
    cause's, and its advice is fusion, not GEMM shapes)."""
    math = [o for o in ops if not is_memory_op(o.name)] or ops
    return max(math, key=lambda o: o.self_cpu_us).name if math else "its ops"


def cpu_cause_verdict(
    ctx: Context,
    metrics: list[StepMetrics],
    ops: list[TopOp],
    eff: Efficiency,
    default_floor_us: float,
) -> Verdict:
    """The CPU verdict: the costliest cause, with its headline (see the module docstring)."""
    c = cpu_costs(ctx, metrics, eff, default_floor_us)
    causes = ranked(c.costs, c.run_us)
    cause = causes[0].cause if causes else "dispatch"
    measured = ctx.measurements is not None and bool(ctx.measurements.call_us)
    share = min(1.0, c.ops_per_call * c.dispatch_floor_us / c.run_us) if c.run_us > 0 else 1.0
    suffix = _wait_note(c) + ("" if measured else " [profiled times, no unprofiled timing]")
    base = Verdict(
        "overhead-bound",
        "",
        cpu_us=c.call_us,
        device_us=0.0,
        overhead_share=share,
        basis="measurements" if measured else "profile",
        cause=cause,
        causes=causes,
    )
    hottest = _hottest_math(ops)
    if cause == "threads":
        verdict = replace(base, headline=_threads_headline(c))
    elif cause == "page-faults":
        verdict = replace(base, headline=_faults_headline(c))
    elif cause == "dispatch":
        # the dispatch cause's share (capped by the threads and faults), as the causes say
        said = min(1.0, c.costs[cause] / c.run_us) if c.run_us > 0 else share
        verdict = replace(base, headline=_dispatch_headline(c, said))
    elif cause == "rng":
        verdict = replace(base, id="rng-bound", headline=_rng_headline(ctx, eff, c))
    else:
        verdict = (
            _memory(ctx, eff, c, base) if cause == "bandwidth" else None
        ) or _compute_verdict(ctx, eff, c, hottest, base)
    return replace(verdict, headline=verdict.headline + suffix)


def low_gpu_efficiency(verdict: Verdict, peaks: Peaks | None) -> Verdict:
    """A GPU ``compute-bound`` whose dominant op is known to run below ``COMPUTE_FLOOR`` is
    ``low-efficiency``; the cause stays ``compute``."""
    eff = verdict.efficiency
    if verdict.id != "compute-bound" or eff is None or peaks is None:
        return verdict
    floor = compute_floor("cuda", peaks.source)
    if eff >= floor:
        return verdict
    rest = verdict.headline.removeprefix("compute-bound: ")
    return replace(
        verdict,
        id="low-efficiency",
        headline=(
            f"low-efficiency: {rest}, but the dominant op runs at {format_share(eff)} of "
            f"{peak_phrase(peaks, 'GPU')} (compute-bound needs {format_share(floor)}); "
            "see low-efficiency-gemm"
        ),
    )
