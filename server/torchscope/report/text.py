"""The terminal report: verdict first, then the numbers that back it, then what to fix.

Plain text, no colour codes, tables within ~100 columns and one line per finding, so it reads
the same in a terminal, a CI log and a test assertion.
"""

from __future__ import annotations

from torchscope.analysis import achieved_text, median, peaks_text
from torchscope.analysis.formatting import format_bytes, format_duration, format_share
from torchscope.analysis.results import Report, StepMetrics
from torchscope.report.causes import causes_text
from torchscope.report.stability import stability_lines, timing_numbers

MAX_STEP_ROWS = 12
"""Longer step lists show the first and last few rows plus the min/median/max summary."""


def _row(cells: list[str], widths: list[int]) -> str:
    first = cells[0].ljust(widths[0])
    rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
    return "  " + "  ".join([first, *rest]).rstrip()


def _step_cells(s: StepMetrics, device: bool) -> list[str]:
    cells = [s.name, format_duration(s.wall_us), format_duration(s.cpu_op_us), str(s.ops)]
    if device:
        cells += [format_share(s.device_busy_share), str(s.launches), str(s.syncs), str(s.copies)]
    return cells


def _steps_table(report: Report) -> list[str]:
    steps = report.steps
    if not steps:
        return ["steps: none"]
    device = report.device.kind != "cpu"
    head = ["step", "wall", "CPU ops", "ops"]
    if device:
        head += ["busy", "launches", "syncs", "copies"]
    rows = [_step_cells(s, device) for s in steps]
    if len(rows) > MAX_STEP_ROWS:
        half = MAX_STEP_ROWS // 2
        rows = [*rows[:half], ["…"] + [""] * (len(head) - 1), *rows[-half:]]
    if len(steps) > 1:
        for label, pick in (("min", min), ("median", median), ("max", max)):
            cells = [
                label,
                format_duration(pick([s.wall_us for s in steps])),
                format_duration(pick([s.cpu_op_us for s in steps])),
                f"{pick([float(s.ops) for s in steps]):g}",
            ]
            if device:
                cells += [
                    format_share(pick([s.device_busy_share for s in steps])),
                    f"{pick([float(s.launches) for s in steps]):g}",
                    f"{pick([float(s.syncs) for s in steps]):g}",
                    f"{pick([float(s.copies) for s in steps]):g}",
                ]
            rows.append(cells)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [f"steps ({len(steps)}, from {report.step_source}):", _row(head, widths)]
    lines += [_row(r, widths) for r in rows]
    return lines


def _header(report: Report) -> list[str]:
    """Device, verdict, unprofiled timing and the profiler's overhead."""
    devices = ", ".join(sorted({d.name for d in report.devices})) or report.device.name
    out = [f"device: {report.device.kind} ({devices})", f"verdict: {report.verdict.headline}"]
    out += stability_lines(report)
    out += causes_text(report.verdict)
    if report.peaks is not None:
        out.append(f"peaks: {peaks_text(report.peaks, report.device.kind)}")
    if report.timing is not None:
        t = report.timing
        out.append(
            f"timing (unprofiled): {timing_numbers(t)}; first call {format_duration(t.cold_us)}"
        )
    if report.profiler_overhead_us is not None:
        out.append(
            f"profiler overhead: {format_duration(report.profiler_overhead_us)} per step "
            "(profiled step minus unprofiled call; not the function's own time)"
        )
    return out + _memory_text(report)


def _memory_text(report: Report) -> list[str]:
    """Page faults (every profile) and the peak (with the memory pass)."""
    m = report.memory
    if m is None:
        return []
    out = []
    if m.page_faults_per_call is not None and m.page_fault_us is not None:
        share = f" ({format_share(m.page_fault_share)} of the call)" if m.page_fault_share else ""
        out.append(
            f"page faults: {m.page_faults_per_call:.0f} per call ≈ "
            f"{format_duration(m.page_fault_us)}{share}"
        )
    if m.peak_bytes is not None:
        where = f" at line {m.peak_line}" if m.peak_line is not None else ""
        out.append(f"memory peak: +{format_bytes(m.peak_bytes)} ({m.peak_device}){where}")
    return out


def _findings(report: Report) -> list[str]:
    if not report.findings:
        return ["findings: none"]
    out = [f"findings ({len(report.findings)}, by cost per step):"]
    for f in report.findings:
        where = ""
        if f.line is not None:
            where = f" {f.file}:{f.line}" if f.file else f" line {f.line}"
        per = "once" if f.details.get("once") else "per step"
        cost = f" (costs {format_duration(f.cost_us)} {per})" if f.cost_us > 0 else ""
        out.append(f"  [{f.severity}] {f.rule}{where}: {f.message}{cost}")
    return out


def _table(title: str, head: list[str], rows: list[list[str]]) -> list[str]:
    """A blank line, the title, then the aligned table; nothing without rows."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return ["", title, _row(head, widths), *(_row(r, widths) for r in rows)]


def op_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    """The op table per step (head, rows), with an ``achieved`` column when any op's rate is
    known (also the notebook's HTML table)."""
    n = max(1, len(report.steps))
    device = report.device.kind != "cpu"
    achieved = [achieved_text(o.gflops, o.gbps, o.efficiency, report.peaks) for o in report.top_ops]
    head = ["op", "calls", "self CPU", "CPU total"] + (["device"] if device else [])
    head += ["achieved"] if any(achieved) else []
    rows = []
    for o, rate in zip(report.top_ops, achieved):
        row = [
            o.name[:60],
            f"{o.calls / n:.0f}" if o.calls >= n else f"{o.calls / n:.1f}",
            format_duration(o.self_cpu_us),
            format_duration(o.cpu_us),
        ]
        row += [format_duration(o.device_us)] if device else []
        rows.append(row + ([rate or "-"] if any(achieved) else []))
    return head, rows


def _top_ops(report: Report) -> list[str]:
    return _table("top ops (per step):", *op_rows(report))


def kernel_rows(report: Report) -> tuple[list[str], list[list[str]]]:
    """The kernel table (head, rows): device time per step, across steps."""
    head = ["kernel", "launches", "min", "median", "max", "launch delay"]
    rows = [
        [
            k.name if len(k.name) <= 60 else k.name[:59] + "…",
            str(k.calls),
            format_duration(k.min_us),
            format_duration(k.median_us),
            format_duration(k.max_us),
            format_duration(k.launch_delay_us) if k.launch_delay_us is not None else "-",
        ]
        for k in report.top_kernels
    ]
    return head, rows


def _top_kernels(report: Report) -> list[str]:
    return _table("top kernels (device time per step, across steps):", *kernel_rows(report))


def render_report(report: Report) -> str:
    """Human-readable multi-line text of ``report``."""
    out = [*_header(report), "", *_steps_table(report), "", *_findings(report)]
    out += _top_ops(report) + _top_kernels(report)
    out += [f"note: {note}" for note in report.notes]
    return "\n".join(out) + "\n"
