"""How close to the limit: achieved FLOP/s and bandwidth of each op against the device's peak.

Each op call with known work (``opclass.op_cost``: FLOPs and bytes from its recorded shapes) is
given a time: on a CPU run its inclusive CPU time, on a GPU run the device time of the kernels
it launched (a kernel launched by an op nested inside is counted for the nearest enclosing op
with work). Rates are totals over the analysed steps: FLOPs / time and bytes / time. The peak
is the worker's calibration (``measured``) or, for a trace from elsewhere, the spec sheet of
the GPU the trace names (``spec-sheet``).

:func:`measure_efficiency` builds the table once per analysis; the metrics stage keeps it in
:class:`~.stages.Metrics` (immutable, like every stage output), so the verdict, the op table,
the lines and the rules read the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ...ingest.values import shapes_key
from ..index.context import Context
from ..results import Peaks, TopOp
from .lines import innermost_line
from .opclass import Work, has_work, op_class, op_cost
from .parts import LineOp, LineStats
from .spec_peaks import spec_sheet_peaks

TF32_KERNEL_MARKERS = ("tf32", "s1688", "s16816", "tensorop_s")
"""Kernel-name parts of TF32 tensor-core GEMMs (as in the ``fp32-matmul`` rule): an fp32
GEMM that runs one is held against the TF32 peak."""


class Rates(NamedTuple):
    """Achieved rates of a group of op calls; None where not known."""

    gflops: float | None
    gbps: float | None
    efficiency: float | None


@dataclass
class Totals:
    """Work and time of a group of op calls, summed over the analysed steps."""

    flops: float = 0.0
    bytes: float = 0.0
    time_us: float = 0.0
    calls: int = 0
    kind: str = "memory"
    peak_key: str = ""


@dataclass(frozen=True)
class Efficiency:
    """Per-op work and time, and the peaks they are set against (the efficiency stage's
    output: read-only once built)."""

    peaks: Peaks | None
    work: Mapping[int, Work] = field(default_factory=dict)
    """Op index → its work (ops inside the analysed steps only)."""
    time_us: Mapping[int, float] = field(default_factory=dict)
    """Op index → its time (ops with work and a time only)."""
    peak_key: Mapping[int, str] = field(default_factory=dict)
    """Op index → the ``matmul_gflops`` key it is held against (dtype, or ``tfloat32``)."""
    outer: tuple[int, ...] = ()
    """Ops with work and a time that no other op with work encloses, in time order."""

    def totals(self, ops: Iterable[int]) -> Totals:
        out = Totals()
        for i in ops:
            t = self.time_us.get(i)
            if t is None:
                continue
            w = self.work[i]
            out.flops += w.flops
            out.bytes += w.bytes
            out.time_us += t
            out.calls += 1
            if w.kind == "gemm":
                out.kind = "gemm"
                out.peak_key = self.peak_key.get(i, w.dtype)
        return out

    def rates(self, t: Totals) -> Rates:
        """GFLOP/s (GEMMs), GB/s and efficiency against the matching peak (capped at 1: data
        that stays in cache moves faster than the copy bandwidth)."""
        if t.time_us <= 0 or t.calls == 0:
            return Rates(None, None, None)
        gbps = t.bytes / t.time_us / 1e3
        gflops = t.flops / t.time_us / 1e3 if t.kind == "gemm" else None
        peak: float | None = None
        achieved = gbps
        if self.peaks is not None:
            if t.kind == "gemm":
                peak = self.peaks.matmul_gflops.get(t.peak_key)
                achieved = gflops or 0.0
            else:
                peak = self.peaks.bandwidth_gbps
        eff = min(1.0, achieved / peak) if peak else None
        return Rates(gflops, gbps, eff)


def peaks_of(ctx: Context) -> Peaks | None:
    """Measured peaks when the worker calibrated (or, for a CPU trace recorded on this machine,
    its calibration store), else the spec sheet of a named GPU."""
    m = ctx.measurements
    # The worker calibrates the device it ran on; a CPU function profiled on a GPU machine
    # launched nothing, and the GPU's peaks do not judge its CPU ops.
    gpu_peaks_for_cpu = m is not None and m.device_kind == "cuda" and not ctx.ran_on_gpu
    if m is not None and m.peaks is not None and not gpu_peaks_for_cpu:
        return m.peaks
    if ctx.here is not None and not ctx.device_run and m is None:
        return ctx.here.peaks
    if ctx.device_run and ctx.trace.devices:
        primary = ctx.primary_device
        names = [d.name for d in ctx.trace.devices if primary is None or d.index == primary]
        return spec_sheet_peaks(names[0] if names else ctx.trace.devices[0].name)
    return None


def missing_peak(ctx: Context) -> str:
    """Why no peak is known (the ``rules_skipped`` reason of the rules that need one, and the
    verdict's when it cannot judge the math)."""
    if ctx.ran_on_gpu:
        names = ", ".join(dict.fromkeys(d.name for d in ctx.trace.devices)) or "the GPU"
        return f"no peak known for {names} (not calibrated, not in the spec-sheet table)"
    m = ctx.measurements
    if m is not None and m.device_kind == "cuda":  # a CPU function on a GPU machine
        return "no peak known for this CPU: the job calibrated the GPU, and the call ran on the CPU"
    if ctx.here is not None:
        return (
            f"this machine's CPU ({ctx.here.cpu}) has no calibrated peak: run "
            "`torchscope calibrate`"
        )
    if ctx.measurements is not None:
        return "no peak known for this CPU (calibration failed)"
    host = ctx.trace.meta.get("host_name")
    where = f"CPU ({host})" if isinstance(host, str) and host else "this CPU"
    return (
        f"no peak known for {where}: the trace was recorded on another machine; analyze it "
        "there, after `torchscope calibrate`"
    )


def _device_times(ctx: Context, work: dict[int, Work]) -> dict[int, float]:
    """Op with work → device time of the kernels it (or an op inside it) launched."""
    parent = ctx.nest.op_parent
    kernels = ctx.trace.kernels
    out: dict[int, float] = {}
    for op, ks in ctx.op_kernels().items():
        i, hops = op, 0
        while i >= 0 and i not in work and hops < 512:
            i, hops = parent[i], hops + 1
        if i >= 0 and i in work:
            out[i] = out.get(i, 0.0) + sum(kernels[k].end - kernels[k].start for k in ks)
    return out


def _peak_keys(ctx: Context, work: dict[int, Work], device: bool) -> dict[int, str]:
    keys: dict[int, str] = {}
    kernels = ctx.trace.kernels
    op_kernels = ctx.op_kernels() if device else {}
    for i, w in work.items():
        if w.kind != "gemm":
            continue
        key = w.dtype
        if device and key == "float32":
            names = (kernels[k].name.lower() for k in op_kernels.get(i, ()))
            if any(m in n for n in names for m in TF32_KERNEL_MARKERS):
                key = "tfloat32"
        keys[i] = key
    return keys


def measure_efficiency(ctx: Context) -> Efficiency:
    """The efficiency stage: every op with known work, its time, and the peaks.

    Only ops whose name can have work (``opclass.has_work``) have their arguments read, so a
    trace's lazily decoded ``args`` stay undecoded for everything else."""
    ops = ctx.trace.ops
    work: dict[int, Work] = {}
    for name, idx in ctx.ops_by_name().items():
        if not has_work(name):
            continue
        # The work is a function of the shapes: a name's calls repeat a few of them (22
        # distinct among 20k calls in hta_ddp_v100_rank1), so each is computed once.
        known: dict[tuple[bytes, bytes, bytes], Work | None] = {}
        for i in idx:
            args = ops[i].args
            key = shapes_key(args)
            if key is None:
                w = op_cost(name, args)
            elif key in known:
                w = known[key]
            else:
                w = known[key] = op_cost(name, args)
            if w is not None:
                work[i] = w
    device = ctx.device_run
    time_us = _device_times(ctx, work) if device else {i: ops[i].end - ops[i].start for i in work}
    parent = ctx.nest.op_parent
    # Outer: no enclosing op with work *and a time*. On a GPU a kernel's time goes to the
    # nearest op with work (``index_select`` inside ``embedding``), and the caller, with no
    # kernel of its own, must not hide it.
    outer: list[int] = []
    for i in sorted(time_us):
        p, hops = parent[i], 0
        while p >= 0 and p not in time_us and hops < 512:
            p, hops = parent[p], hops + 1
        if p < 0 or p not in time_us:
            outer.append(i)
    return Efficiency(peaks_of(ctx), work, time_us, _peak_keys(ctx, work, device), tuple(outer))


def name_rates(ctx: Context, eff: Efficiency, name: str) -> Rates:
    """Rates of all calls of one op name in the analysed steps."""
    return eff.rates(eff.totals(ctx.ops_by_name().get(name, [])))


def annotate_ops(ctx: Context, eff: Efficiency, ops: Iterable[TopOp]) -> list[TopOp]:
    """The op table with each op's class, FLOPs and bytes per step (the cost model's, None
    where it has none), achieved rates and efficiency."""
    out: list[TopOp] = []
    by_name = ctx.ops_by_name()
    steps = max(1, len(ctx.steps))
    for o in ops:
        r = name_rates(ctx, eff, o.name)
        calls: list[int] = list(by_name.get(o.name, ()))
        works = [eff.work[i] for i in calls if i in eff.work]
        first = ctx.trace.ops[calls[0]].args if calls else None
        out.append(
            replace(
                o,
                gflops=r.gflops,
                gbps=r.gbps,
                efficiency=r.efficiency,
                op_class=op_class(o.name, first),
                flops=sum(w.flops for w in works) / steps if works else None,
                bytes=sum(w.bytes for w in works) / steps if works else None,
            )
        )
    return out


def annotate_lines(ctx: Context, eff: Efficiency, lines: list[LineStats]) -> list[LineStats]:
    """The lines with their ops' rates (ops counted for the innermost line marker)."""
    if not lines or not eff.time_us:
        return lines
    groups: dict[tuple[int, str], list[int]] = {}
    for i in eff.time_us:
        line = innermost_line(ctx, ctx.nest.op_ann[i])
        if line is not None:
            groups.setdefault((line, ctx.trace.ops[i].name), []).append(i)
    out: list[LineStats] = []
    for stats in lines:
        ops: list[LineOp] = []
        for op in stats.ops:
            found = groups.get((stats.line, op.name))
            if found:
                r = eff.rates(eff.totals(found))
                op = replace(op, gflops=r.gflops, gbps=r.gbps, efficiency=r.efficiency)
            ops.append(op)
        out.append(replace(stats, ops=ops))
    return out
