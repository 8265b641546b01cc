"""The one-line verdict and the two numbers behind it (DESIGN.md §3, "The verdict").

Decisions use the median over steps, so one odd step (allocator growth, a recompile, CUDA
lazy init) cannot flip the answer. When the worker's unprofiled :class:`Measurements` exist,
the time per call in the headline is theirs: the profiler adds microseconds per recorded op,
so at 8×8 the guide's ``fn`` runs ~2.7 µs per call but shows 20-80 µs per profiled step.
"""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..index.link import is_launch
from ..measure.efficiency import Efficiency
from ..measure.roofline import judge_efficiency
from ..results import Borderline, Cause, StepMetrics, TopOp, Verdict
from .cause_verdict import cpu_cause_verdict, low_gpu_efficiency
from .causes import gpu_costs, gpu_ranked, ranked
from .regimes import borderline, borderline_headline, deciding_steps, regime_headline, step_figure

# -- CPU-only runs -----------------------------------------------------------------------
OVERHEAD_BOUND_DISPATCH_SHARE = 0.5
"""CPU-only: at least half the unprofiled time per call in per-op dispatch (ops × the
measured floor) makes dispatch the costliest cause whatever the rest is (``causes.py`` ranks
them; the sweep's crossover uses the same line)."""

DEFAULT_DISPATCH_FLOOR_US = 2.0
"""Per-op eager dispatch cost assumed when a trace is analysed without measurements (a
1-element ``torch.add`` costs ~1-3 µs on current x86 CPUs; the worker measures it per run)."""

# -- device runs -------------------------------------------------------------------------
COMPUTE_BOUND_BUSY = 0.8
"""Device busy ≥ 80 % of the step: the device is the bottleneck (DESIGN.md §3 table; the
TensorBoard plugin's GPU-utilisation advice also starts below this band)."""

OVERHEAD_BOUND_BUSY = 0.3
"""Device busy < 30 % of the step while the CPU is dispatching: the DESIGN.md §3 band for a
launch/dispatch-bound step. Between 30 % and 80 % with no sync, input or copy cause the
device is still waiting on the CPU, and the verdict says so with the busy share."""

INPUT_BOUND_SHARE = 0.10
"""Device idle while the CPU is inside DataLoader ``__next__`` for ≥ 10 % of the step. The
TensorBoard plugin flags DataLoader time above 5 % of a step; the verdict needs twice that,
and counts only time the device actually sat idle (kineto's resnet50 sample: 30-39 % of each
step with ``num_workers=0``, under 3 % with ``num_workers=4``)."""

SYNC_BOUND_SHARE = 0.5
"""CPU blocked in synchronising calls for ≥ half the step: the largest single share it can
have, so nothing else can dominate (hta_recsys_a100_rank0: ~70 % in pageable DtoH copies)."""

COPY_BOUND_SHARE = 0.5
"""Memcpy time ≥ half the device's busy time (Nsight's ``cuda_gpu_mem_time_sum`` ordering):
the device mostly moves bytes rather than computing."""


def _timing_us(ctx: Context, metrics: list[StepMetrics]) -> tuple[float, str]:
    """Time per call: unprofiled median when measured, else the median profiled step."""
    m = ctx.measurements
    if m is not None and m.call_us:
        return median(m.call_us), "measurements"
    return median([s.wall_us for s in metrics]), "profile"


def _no_activity(metrics: list[StepMetrics]) -> Verdict:
    wall = median([s.wall_us for s in metrics])
    return Verdict(
        id="no-activity",
        headline=(
            f"no-activity: the profiled steps ({format_duration(wall)} each) recorded no ops "
            "and no device work"
        ),
        cpu_us=wall,
        device_us=0.0,
        overhead_share=None,
    )


def cpu_verdict(
    ctx: Context, metrics: list[StepMetrics], ops: list[TopOp], efficiency: Efficiency
) -> Verdict:
    """The CPU-only verdict: the costliest of its measured causes (``cause_verdict``)."""
    if median([float(s.ops) for s in metrics]) <= 0:
        return _no_activity(metrics)
    return cpu_cause_verdict(ctx, metrics, ops, efficiency, DEFAULT_DISPATCH_FLOOR_US)


def _dataloader_workers(ctx: Context) -> str:
    names = {a.name for a in ctx.trace.annotations if a.name.startswith("enumerate(DataLoader)")}
    if any("_SingleProcessDataLoaderIter" in n for n in names):
        return " (num_workers=0)"
    if any("_MultiProcessingDataLoaderIter" in n for n in names):
        return " (num_workers>0)"
    return ""


def _dominant_sync(ctx: Context) -> tuple[str, int | None]:
    """Name (and source line) of the synchronising call with the most blocked time."""
    time_by: dict[str, float] = {}
    line_by: dict[str, int | None] = {}
    for i, r in enumerate(ctx.trace.runtime):
        if ctx.blocking[i] and ctx.step_of_rt[i] >= 0 and i not in ctx.flush:
            label = r.name
            copies = ctx.copy_of(i)
            if copies:
                label = f"{r.name} ({copies[0].name})"
            time_by[label] = time_by.get(label, 0.0) + (r.end - r.start)
            if label not in line_by:
                line_by[label] = ctx.sources.of_runtime(i)[1]
    if not time_by:
        return "synchronising calls", None
    label = max(time_by, key=lambda k: time_by[k])
    return label, line_by.get(label)


def _dominant_copy(ctx: Context) -> str:
    time_by: dict[str, float] = {}
    for i, s in enumerate(ctx.trace.memcpys):
        if ctx.step_of_memcpy[i] >= 0:
            time_by[s.name] = time_by.get(s.name, 0.0) + (s.end - s.start)
    return max(time_by, key=lambda k: time_by[k]) if time_by else "Memcpy"


def device_causes(metrics: list[StepMetrics], share: float) -> list[Cause]:
    """The GPU causes of the steps a verdict decides on, in the order of what holds the step
    (``causes.gpu_ranked``): the verdict names the first."""
    costs, wall = gpu_costs(metrics)
    return gpu_ranked(costs, wall, share >= COMPUTE_BOUND_BUSY)


def device_verdict(ctx: Context, metrics: list[StepMetrics]) -> Verdict:
    """The GPU verdict: the first of its causes (``device_causes``), named by the thresholds
    above. With two regimes of busy share the figures are the steady steps' (``regimes``) and
    the headline says how many steps they are."""
    share, steps = deciding_steps(metrics)
    busy = median([s.device_busy_us for s in steps])
    cpu_us, basis = _timing_us(ctx, steps)
    device_us = median([s.device_time_us for s in steps]) or busy
    causes = device_causes(steps, share)
    verdict_id, headline = _device_cause(ctx, steps, share, busy, causes) or _device_overhead(
        share, cpu_us, device_us, basis
    )
    close = _borderline(ctx, steps, verdict_id, share)
    headline = regime_headline(headline, verdict_id, metrics)
    return Verdict(
        verdict_id,
        borderline_headline(headline, verdict_id, close),
        cpu_us=cpu_us,
        device_us=device_us,
        overhead_share=1.0 - share,
        basis=basis,
        borderline=close,
        cause=causes[0].cause if causes else "dispatch",
        causes=causes,
    )


def _borderline(
    ctx: Context, metrics: list[StepMetrics], verdict_id: str, share: float
) -> Borderline | None:
    """The runner-up of a verdict decided within the steps' spread of its threshold."""
    threshold = {
        "input-bound": INPUT_BOUND_SHARE,
        "sync-bound": SYNC_BOUND_SHARE,
        "copy-bound": COPY_BOUND_SHARE,
    }.get(verdict_id, COMPUTE_BOUND_BUSY)
    figures = [step_figure(verdict_id, s) for s in metrics]
    deciding = share if threshold == COMPUTE_BOUND_BUSY else median([f or 0.0 for f in figures])

    def alone(s: StepMetrics) -> str:
        share = s.device_busy_share
        one = _device_cause(ctx, [s], share, s.device_busy_us, device_causes([s], share))
        return one[0] if one else "overhead-bound"

    return borderline(verdict_id, deciding, threshold, metrics, alone)


def _device_cause(
    ctx: Context, metrics: list[StepMetrics], share: float, busy: float, causes: list[Cause]
) -> tuple[str, str] | None:
    """The id and headline the first cause names when it passes its line above (None: the
    device waits on the CPU, ``overhead-bound``, whose cause is that first one)."""
    first = causes[0].cause if causes else "dispatch"
    wall = median([s.wall_us for s in metrics])
    memcpy = median([s.memcpy_us for s in metrics])
    if first == "bandwidth" and busy > 0 and memcpy / busy >= COPY_BOUND_SHARE:
        return "copy-bound", (
            f"copy-bound: {format_share(min(1.0, memcpy / busy))} of GPU time in "
            f"{_dominant_copy(ctx)}"
        )
    if share >= COMPUTE_BOUND_BUSY:
        # The share is of the step's span (CPU start to the last device end): on a GPU the
        # CPU returns after launching, so its wall can be a fraction of the device's time.
        span = median([s.span_us or s.wall_us for s in metrics])
        return "compute-bound", (
            f"compute-bound: GPU busy {format_share(share)} ({format_duration(busy)} of "
            f"{format_duration(span)})"
        )
    wait = median([s.input_wait_us for s in metrics])
    if first == "input" and wall > 0 and wait / wall >= INPUT_BOUND_SHARE:
        return "input-bound", (
            f"input-bound: GPU idle {format_share(wait / wall)} of each step while waiting on "
            "DataLoader"
            f"{_dataloader_workers(ctx)} ({format_duration(wait)} of {format_duration(wall)})"
        )
    sync = median([s.sync_us for s in metrics])
    if first == "sync" and wall > 0 and sync / wall >= SYNC_BOUND_SHARE:
        what, line = _dominant_sync(ctx)
        where = f" (line {line})" if line is not None else ""
        return "sync-bound", (
            f"sync-bound: {format_duration(sync)} of {format_duration(wall)} waiting in "
            f"{what}{where}"
        )
    return None


def _device_overhead(share: float, cpu_us: float, device_us: float, basis: str) -> tuple[str, str]:
    """The overhead-bound verdict's id and headline: the CPU side is the longer one."""
    label = "CPU" if basis == "measurements" else "CPU per step"
    extra = "" if share < OVERHEAD_BOUND_BUSY else f", GPU busy only {format_share(share)}"
    return "overhead-bound", (
        f"overhead-bound: {format_duration(cpu_us)} {label} vs {format_duration(device_us)} "
        f"GPU{extra}"
    )


def no_kernels_verdict(ctx: Context, metrics: list[StepMetrics]) -> Verdict:
    """Launch calls but no device events: the device side was not traced (CUPTI range
    profiling, or CUDA activity left out of ``activities``)."""
    launches = sum(1 for r in ctx.trace.runtime if is_launch(r.name))
    cpu_us, basis = _timing_us(ctx, metrics)
    costs, wall = gpu_costs(metrics)
    causes = ranked(costs, wall)
    return Verdict(
        "no-kernels",
        f"no kernels were recorded: {launches} kernel launches but no device activity in the trace "
        "(CUPTI range profiling, or ProfilerActivity.CUDA missing); "
        f"{format_duration(cpu_us)} CPU per step",
        cpu_us=cpu_us,
        device_us=0.0,
        overhead_share=None,
        basis=basis,
        cause=causes[0].cause if causes else "dispatch",
        causes=causes,
    )


def decide(
    ctx: Context, metrics: list[StepMetrics], ops: list[TopOp], efficiency: Efficiency
) -> Verdict:
    """Pick the verdict for the whole trace, with its efficiency (see ``roofline``) and its
    ranked causes (``causes``)."""
    verdict, device = _decide(ctx, metrics, ops, efficiency)
    if not device:
        return verdict
    verdict = judge_efficiency(ctx, verdict, ops, efficiency)
    return low_gpu_efficiency(verdict, efficiency.peaks)


def _decide(
    ctx: Context, metrics: list[StepMetrics], ops: list[TopOp], efficiency: Efficiency
) -> tuple[Verdict, bool]:
    """The verdict, and whether it is a GPU one (judged against the device's peaks)."""
    if not metrics:
        empty = "no-activity: the trace recorded no steps, ops or device work"
        return Verdict("no-activity", empty, 0.0, 0.0), False
    if ctx.device_run:
        if median([s.device_busy_us for s in metrics]) == 0.0 and not any(
            s.launches for s in metrics
        ):
            if not any(s.ops for s in metrics):
                return _no_activity(metrics), False
            return cpu_verdict(ctx, metrics, ops, efficiency), False
        return device_verdict(ctx, metrics), True
    if any(is_launch(r.name) for r in ctx.trace.runtime):
        return no_kernels_verdict(ctx, metrics), True
    return cpu_verdict(ctx, metrics, ops, efficiency), False
