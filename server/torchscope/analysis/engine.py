"""``analyze_trace``: parse → normalise → nest → link → segment → metrics → verdict → rules.

The garbage collector is paused for the whole analysis: a big trace is ~200k small dicts
that all stay alive until the end, so every collection pass would be wasted work (it costs
about a third of the runtime otherwise). Nothing here builds reference cycles.
"""

from __future__ import annotations

import gc
import os
from operator import itemgetter

from ..ingest import Trace, load_trace
from .index.context import Context, build_context
from .measure.callees import callee_stats
from .measure.efficiency import annotate_lines
from .measure.lines import line_stats
from .measure.machine import LocalMachine
from .measure.memory import attach_line_memory, memory_summary
from .measure.metrics import measure
from .measure.op_table import top_kernels
from .results import Device, Measurements, Report
from .rules import ALL_RULES, run_rules
from .verdict.consistency import self_check
from .verdict.cost_basis import profiled_cost_note
from .verdict.findings import FINDINGS_DOC
from .verdict.stability import judged, timing_of
from .verdict.verdict import decide

__all__ = ["ALL_RULES", "FINDINGS_DOC", "analyze", "analyze_trace"]

_TRACK = itemgetter(3)


def _devices(ctx: Context) -> tuple[Device, list[Device]]:
    trace = ctx.trace
    m = ctx.measurements
    if ctx.ran_on_gpu:
        names = {d.index: d.name for d in trace.devices}
        streams = set(map(_TRACK, trace.kernels))  # per stream, not per span (20k kernels)
        streams.update(map(_TRACK, trace.memcpys), map(_TRACK, trace.memsets))
        used = sorted({trace.tracks[t].device for t in streams})
        listed = [Device("cuda", names.get(d, f"GPU {d}")) for d in used] or [
            Device("cuda", d.name) for d in trace.devices[:1]
        ]
        primary = ctx.primary_device
        if primary is not None:
            main = Device("cuda", names.get(primary, f"GPU {primary}"))
        elif m is not None and m.device_kind == "cuda" and m.device_name:
            main = Device("cuda", m.device_name)
        else:
            main = listed[0]
        return main, listed
    if m is not None and m.device_kind != "cuda":
        dev = Device("cpu", m.device_name or "CPU")
        return dev, [dev]
    if ctx.here is not None:
        dev = Device("cpu", ctx.here.cpu)
        return dev, [dev]
    host = trace.meta.get("host_name")
    dev = Device("cpu", f"CPU ({host})" if isinstance(host, str) and host else "CPU")
    return dev, [dev]


def analyze(
    trace: Trace, measurements: Measurements | None = None, local: LocalMachine | None = None
) -> Report:
    """Analyse an already loaded trace; ``local``: this machine, whose CPU and calibrated
    peaks a CPU trace recorded on it is judged by (``machine``)."""
    ctx = build_context(trace, measurements, local)
    measured = measure(ctx)
    metrics, ops = list(measured.steps), list(measured.top_ops)
    verdict = decide(ctx, metrics, ops, measured.efficiency)
    findings, skipped = run_rules(ctx, measured)
    timing = timing_of(measurements)
    verdict, overhead = judged(verdict, measurements, timing, metrics)
    device, devices = _devices(ctx)
    lines = line_stats(ctx)
    notes: list[str] = []
    for rule_id, why in skipped.items():
        if why.startswith("failed:"):
            notes.append(f"rule {rule_id} {why}")
    if trace.skipped_events:
        notes.append(f"{trace.skipped_events} malformed events were skipped")
    if ctx.steps and ctx.steps[0].source != "ProfilerStep":
        notes.append(f"no ProfilerStep annotations: steps are {ctx.steps[0].source} windows")
    cost_note = profiled_cost_note(verdict, metrics, findings)
    if cost_note is not None:
        notes.append(cost_note)
    report = Report(
        device=device,
        verdict=verdict,
        timing=timing,
        profiler_overhead_us=overhead,
        findings=findings,
        top_ops=ops,
        steps=metrics,
        devices=devices,
        kernels_recorded=len(trace.kernels),
        step_source=ctx.steps[0].source if ctx.steps else "none",
        notes=notes,
        rules_skipped=skipped,
        top_kernels=top_kernels(ctx),
        lines=attach_line_memory(annotate_lines(ctx, measured.efficiency, lines), measured.memory),
        callees=callee_stats(ctx, lines),
        peaks=measured.efficiency.peaks,
        memory=memory_summary(ctx, measured.memory),
        machine=measurements.machine if measurements is not None else None,
    )
    self_check(report)
    return report


def analyze_trace(
    path: str | os.PathLike[str],
    measurements: Measurements | None = None,
    local: LocalMachine | None = None,
) -> Report:
    """Analyse the trace at ``path`` (``.json`` or ``.json.gz``); raises :class:`TraceError`."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return analyze(load_trace(path), measurements, local)
    finally:
        if enabled:
            gc.enable()
