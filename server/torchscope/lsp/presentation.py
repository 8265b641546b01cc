"""Words and numbers for the editor: inlay labels, hover markdown, lens titles.

Reads the typed :class:`~torchscope.lsp.results.Profile` (the same report ``torchscope profile``
renders), so what the editor says and what the CLI says cannot drift apart.
"""

from __future__ import annotations

from typing import Optional

from torchscope.analysis import format_duration
from torchscope.analysis.callees import CalleeStats
from torchscope.analysis.lines import LineOp, LineStats
from torchscope.analysis.report import Peaks
from torchscope.analysis.roofline import achieved_text, peaks_text
from torchscope.lsp.compare_presentation import compare_hover

# The client command ids live in lsp/constants.py; re-exported for the editor features.
from torchscope.lsp.constants import CLIENT_COMPARE_COMPILE as CLIENT_COMPARE_COMPILE
from torchscope.lsp.constants import CLIENT_OPEN_GENERATED_CODE as CLIENT_OPEN_GENERATED_CODE
from torchscope.lsp.constants import CLIENT_OPEN_TRACE as CLIENT_OPEN_TRACE
from torchscope.lsp.constants import CLIENT_PROFILE as CLIENT_PROFILE
from torchscope.lsp.constants import CLIENT_PROFILE_SIZES as CLIENT_PROFILE_SIZES
from torchscope.lsp.links import command_link
from torchscope.lsp.memory_presentation import memory_hover, memory_sentences
from torchscope.lsp.ranks_presentation import headline, ranks_hover
from torchscope.lsp.results import Profile


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
    parts = [f"{line.share * 100:.0f}%", f"{format_duration(line.cpu_us)} CPU"]
    if gpu:
        parts.append(f"{format_duration(line.device_us)} GPU")
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


def hot_lines(profile: Profile, threshold: float) -> list[LineStats]:
    return [line for line in profile.report.lines if line.share >= threshold]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


STALE_NOTE = "*The function changed since it was profiled: re-profile for current numbers.*"


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
    return _table(header, rows)


def _line_tables(line: LineStats, peaks: Optional[Peaks] = None) -> list[str]:
    parts = []
    if line.ops:
        parts.append(_ops_table(line.ops[:8], peaks))
    if line.kernels:
        rows = [
            [f"`{k.name[:80]}`", f"{k.calls:g}", format_duration(k.device_us)]
            for k in line.kernels[:6]
        ]
        parts.append(_table(["kernel", "calls", "device time"], rows))
    if line.copies:
        rows = [
            [c.kind, f"{c.calls:g}", f"{c.bytes:,.0f} B", format_duration(c.device_us)]
            for c in line.copies
        ]
        parts.append(_table(["copy", "calls", "bytes", "device time"], rows))
    return parts


def line_hover(profile: Profile, line: LineStats, qualname: str, stale: bool) -> str:
    """The ops, kernels, copies and syncs of one line, per call of the function."""
    gpu = profile.gpu
    title = (
        f"**torchscope** · line {line.line} · {line.share * 100:.0f}% of `{qualname}` · "
        f"{format_duration(line.cpu_us)} CPU"
        + (f" · {format_duration(line.device_us)} GPU" if gpu else "")
        + " per call"
    )
    parts = [title]
    if stale:
        parts.append(STALE_NOTE)
    if line.hits != 1:
        parts.append(f"Runs {line.hits:g}× per call.")
    parts += _line_tables(line, profile.report.peaks)
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


def def_hover(profile: Profile, qualname: str, offset: int, stale: bool) -> str:
    """Verdict, timing (cold vs steady), top lines and a link to the trace."""
    report = profile.report
    parts = [f"**torchscope** · `{qualname}` · {headline(profile)}"]
    if stale:
        parts.append(STALE_NOTE)
    timing = report.timing
    if timing:
        parts.append(
            f"Per call, without the profiler: median {format_duration(timing.median_us)} "
            f"(min {format_duration(timing.min_us)}, max {format_duration(timing.max_us)}, "
            f"{timing.calls} calls); first call {format_duration(timing.cold_us)}."
        )
    overhead = report.profiler_overhead_us
    if overhead is not None:
        parts.append(f"Profiler overhead: {format_duration(overhead)} per call (not your code's).")
    parts += _efficiency_note(profile)
    if report.lines:
        rows = [
            [str(line.line + offset), f"{line.share * 100:.0f}%", format_duration(line.cpu_us)]
            for line in report.lines[:3]
        ]
        parts.append(_table(["line", "share", "CPU per call"], rows))
    parts += memory_sentences(report, offset)
    if profile.comparison is not None:
        parts.append(compare_hover(profile.comparison))
    if profile.ranks is not None:
        parts.append(ranks_hover(profile.ranks))
    parts.append(command_link("Open trace", CLIENT_OPEN_TRACE, {"path": profile.trace_path}))
    return "\n\n".join(parts)


def _efficiency_note(profile: Profile) -> list[str]:
    """How close the verdict's dominant op is to the peak, and which peaks those are."""
    report = profile.report
    if report.peaks is None:
        return []
    note = f"Peaks: {peaks_text(report.peaks, report.device.kind)}."
    efficiency = report.verdict.efficiency
    if efficiency is not None:
        note = f"The dominant op runs at {efficiency * 100:.0f}% of its peak. " + note
    return [note]


def headline_title(profile: Optional[Profile], stale: bool) -> Optional[str]:
    if profile is None:
        return None
    title = headline(profile)
    return f"{title} (stale)" if stale else title
