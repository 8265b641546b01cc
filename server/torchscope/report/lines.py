"""Per-line output, drawn once: one row per source line (number, share, CPU and GPU time per
call, and the line's own numbers) and every face's form of it — the CLI's margin beside the
source, the editor's inlay label, line hover and ``def`` hover table, the MCP summary's hot
lines.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from torchscope.analysis import CalleeStats, LineOp, LineStats, achieved_text
from torchscope.analysis.formatting import format_duration
from torchscope.analysis.results import Peaks, Report
from torchscope.report.markdown import md_table
from torchscope.report.memory import memory_hover

STALE_NOTE = "*The function changed since it was profiled: re-profile for current numbers.*"


class LineRow(NamedTuple):
    """One line as every face shows it (times per call of the function)."""

    line: int
    """The line number shown: the profiled line plus the caller's offset."""
    share: str
    """``41%``: the line's share of the call."""
    cpu: str
    """``2.1 ms``: CPU time per call."""
    gpu: str
    """``0.4 ms``: device time per call; ``""`` where the run had no GPU."""
    stats: LineStats
    """The line's numbers: its ops, kernels, copies, syncs and memory."""


def line_row(stats: LineStats, gpu: bool, offset: int = 0) -> LineRow:
    """The row of one line (``gpu``: show its device time)."""
    return LineRow(
        line=stats.line + offset,
        share=f"{stats.share * 100:.0f}%",
        cpu=format_duration(stats.cpu_us),
        gpu=format_duration(stats.device_us) if gpu else "",
        stats=stats,
    )


def line_rows(report: Report, offset: int = 0, limit: Optional[int] = None) -> list[LineRow]:
    """The report's lines, hottest first (the first ``limit``), each shifted by ``offset``."""
    gpu = report.device.kind == "cuda"
    lines = sorted(report.lines, key=lambda x: -x.share)[:limit]
    return [line_row(stats, gpu, offset) for stats in lines]


def source_with_margin(source: str, first: int, last: int, report: Report) -> str:
    """Lines ``first``–``last`` of ``source`` with each line's share and time per call in a
    left margin (``torchscope profile``)."""
    by_line = {row.stats.line: row for row in line_rows(report)}
    gpu = report.device.kind == "cuda"
    source_lines = source.splitlines()
    rows = []
    for number in range(first, last + 1):
        code = source_lines[number - 1] if number <= len(source_lines) else ""
        row = by_line.get(number)
        margin = ""
        if row is not None:
            margin = f"{row.share:>4} {row.cpu:>8}" + (f" {row.gpu:>8}" if gpu else "")
        width = 23 if gpu else 14
        rows.append(f"{margin:>{width}} {number:4d} │ {code}")
    header = "per line (share · CPU" + (" · GPU" if gpu else "") + " per call):"
    return "\n".join([header, *rows])


def hot_lines_text(report: Report, limit: int) -> str:
    """``hot lines (share, CPU per call): L12 41% 2.1 ms, …`` (``""`` without lines)."""
    rows = line_rows(report, limit=limit)
    if not rows:
        return ""
    return "hot lines (share, CPU per call): " + ", ".join(
        f"L{row.line} {row.share} {row.cpu}" for row in rows
    )


def hot_lines_markdown(report: Report, offset: int, limit: int = 3) -> Optional[str]:
    """The ``def`` hover's table of the hottest lines (None without lines)."""
    rows = line_rows(report, offset, limit)
    if not rows:
        return None
    cells = [[str(row.line), row.share, row.cpu] for row in rows]
    return md_table(["line", "share", "CPU per call"], cells)


def _op_rate(op: LineOp, peaks: Optional[Peaks]) -> str:
    return achieved_text(op.gflops, op.gbps, op.efficiency, peaks)


def line_rate(line: LineStats, peaks: Optional[Peaks]) -> str:
    """The achieved rate of the line's hottest op that has one (``""`` when none does)."""
    return next((rate for op in line.ops if (rate := _op_rate(op, peaks))), "")


def line_label(
    line: LineStats, gpu: bool, stale: bool, peaks: Optional[Peaks] = None, rate: bool = True
) -> str:
    """``  41% · 2.1 ms CPU · 0.4 ms GPU`` (per call; no GPU part on CPU-only runs), then the
    hottest op's achieved rate when known and ``rate``: ``· 165 GFLOP/s · 81 % of peak``."""
    row = line_row(line, gpu)
    parts = [row.share, f"{row.cpu} CPU"] + ([f"{row.gpu} GPU"] if gpu else [])
    achieved = line_rate(line, peaks) if rate else None
    if achieved:
        parts.append(achieved)
    label = "  " + " · ".join(parts)
    return label + " (stale)" if stale else label


def callee_label(callee: CalleeStats, caller: str, stale: bool) -> str:
    """``  called by fn: 38% · 1.2 ms CPU per call`` on a callee's ``def`` line."""
    label = (
        f"  called by {caller}: {callee.share * 100:.0f}% · "
        f"{format_duration(callee.cpu_us)} CPU per call"
    )
    return label + " (stale)" if stale else label


def _ops_table(ops: list[LineOp], peaks: Optional[Peaks]) -> str:
    """The line's ops; an ``achieved`` column (rate and share of the peak) when any has one."""
    rates = [_op_rate(op, peaks) for op in ops]
    rows = [
        [f"`{op.name}`", f"{op.calls:g}", format_duration(op.self_cpu_us), op.shapes] for op in ops
    ]
    header = ["op", "calls", "self CPU", "input shapes"]
    if any(rates):
        header.append("achieved")
        rows = [[*row, rate or "–"] for row, rate in zip(rows, rates)]
    return md_table(header, rows)


def _line_tables(line: LineStats, peaks: Optional[Peaks] = None) -> list[str]:
    parts = []
    if line.ops:
        parts.append(_ops_table(line.ops[:8], peaks))
    if line.kernels:
        rows = [
            [f"`{k.name[:80]}`", f"{k.calls:g}", format_duration(k.device_us)]
            for k in line.kernels[:6]
        ]
        parts.append(md_table(["kernel", "calls", "device time"], rows))
    if line.copies:
        rows = [
            [c.kind, f"{c.calls:g}", f"{c.bytes:,.0f} B", format_duration(c.device_us)]
            for c in line.copies
        ]
        parts.append(md_table(["copy", "calls", "bytes", "device time"], rows))
    return parts


def line_markdown(
    line: LineStats, qualname: str, gpu: bool, peaks: Optional[Peaks], stale: bool
) -> str:
    """The line hover: the ops, kernels, copies and syncs of one line, per call."""
    row = line_row(line, gpu)
    title = (
        f"**torchscope** · line {row.line} · {row.share} of `{qualname}` · {row.cpu} CPU"
        + (f" · {row.gpu} GPU" if gpu else "")
        + " per call"
    )
    parts = [title]
    if stale:
        parts.append(STALE_NOTE)
    if line.hits != 1:
        parts.append(f"Runs {line.hits:g}× per call.")
    parts += _line_tables(line, peaks)
    if line.syncs:
        parts.append(
            f"Synchronisations: {line.syncs:g} per call, {format_duration(line.sync_us)} "
            "with the CPU waiting for the GPU."
        )
    if line.profiled_cpu_us:
        parts.append(
            f"CPU per call is this line's share of the unprofiled time; under the profiler it "
            f"took {format_duration(line.profiled_cpu_us)} (op times above are profiled)."
        )
    memory = memory_hover(line)
    if memory:
        parts.append(memory)
    parts.append(
        "Across steps (CPU): min "
        f"{format_duration(line.cpu_us_min)} · median {format_duration(line.cpu_us_median)}"
        f" · max {format_duration(line.cpu_us_max)}"
    )
    return "\n\n".join(parts)
