"""The editor's ``def`` hover in Markdown: verdict, timing (cold vs steady), the profiler's
overhead, the peaks, the hottest lines and memory. The editor appends its own parts (the
comparison with its command links, the ranks, the link to the trace)."""

from __future__ import annotations

from torchscope.analysis import peaks_text
from torchscope.analysis.formatting import format_duration
from torchscope.analysis.results import Report
from torchscope.report.causes import causes_markdown
from torchscope.report.lines import STALE_NOTE, hot_lines_markdown
from torchscope.report.memory import memory_sentences
from torchscope.report.stability import machine_line, timing_numbers, unstable_line


def efficiency_note(report: Report) -> list[str]:
    """How close the verdict's dominant op is to the peak, and which peaks those are."""
    if report.peaks is None:
        return []
    note = f"Peaks: {peaks_text(report.peaks, report.device.kind)}."
    efficiency = report.verdict.efficiency
    if efficiency is not None:
        note = f"The dominant op runs at {efficiency * 100:.0f}% of its peak. " + note
    return [note]


def def_markdown(report: Report, qualname: str, headline: str, offset: int, stale: bool) -> str:
    """The ``def`` hover's own parts; ``headline`` is the verdict's (naming the slowest rank of
    a multi-process run), ``offset`` shifts the line numbers to where the lines are now."""
    parts = [f"**torchscope** · `{qualname}` · {headline}"]
    if stale:
        parts.append(STALE_NOTE)
    unstable, machine = unstable_line(report), machine_line(report)
    parts += [f"**{unstable}**"] if unstable else []
    parts += [machine] if machine else []
    timing = report.timing
    if timing:
        parts.append(
            f"Per call, without the profiler: {timing_numbers(timing)}; "
            f"first call {format_duration(timing.cold_us)}."
        )
    overhead = report.profiler_overhead_us
    if overhead is not None:
        parts.append(f"Profiler overhead: {format_duration(overhead)} per call (not your code's).")
    causes = causes_markdown(report.verdict)
    if causes is not None:
        parts.append(causes)
    parts += efficiency_note(report)
    table = hot_lines_markdown(report, offset)
    if table is not None:
        parts.append(table)
    parts += memory_sentences(report, offset)
    return "\n\n".join(parts)
