"""Memory in the editor's words: the ``+48 MB · 3 allocs`` inlay label, the per-device hover
table with the largest allocations, and the verdict hover's peak and page-fault sentences."""

from __future__ import annotations

from typing import Optional

from torchscope.analysis import LineStats
from torchscope.analysis.formatting import format_duration
from torchscope.analysis.results import Report

#: Lines allocating less than this per call get no memory hint (the hover still shows it).
MIN_HINT_BYTES = 1_000_000


def format_size(n: float) -> str:
    """Decimal units as the hints show them: ``48 MB``, ``1.5 kB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if abs(value) >= 10 else f"{value:.1f} {unit}"
    return f"{n:.0f} B"


def memory_label(line: LineStats) -> Optional[str]:
    """``  +48 MB · 3 allocs`` (all devices together, per call); None below the threshold."""
    if line.memory is None:
        return None
    devices = line.memory.device.values()
    total = sum(d.alloc_bytes for d in devices)
    allocs = sum(d.allocs for d in devices)
    if total < MIN_HINT_BYTES:
        return None
    count = f"{allocs:.0f}" if allocs >= 1 else f"{allocs:.1f}"
    label = f"  +{format_size(total)} · {count} alloc{'s' if count != '1' else ''}"
    if any(d.leaks_every_call for d in devices):
        label += f" · leaks {format_size(sum(d.retained_bytes for d in devices))}"
    return label


def memory_lines(report: Report) -> list[tuple[LineStats, str]]:
    """(line, label) for every line worth a memory hint."""
    out = []
    for line in report.lines:
        label = memory_label(line)
        if label is not None:
            out.append((line, label))
    return out


def memory_hover(line: LineStats) -> Optional[str]:
    """Markdown: per device allocated / allocations / alive after the call, then the largest
    allocations with the op and input shapes that made them."""
    if line.memory is None or not line.memory.device:
        return None
    rows = [
        f"| {name} | {format_size(d.alloc_bytes)} | {d.allocs:g} | {format_size(d.alive_bytes)} |"
        for name, d in line.memory.device.items()
    ]
    parts = [
        "**Memory per call**",
        "| device | allocated | allocations | alive after the call |\n|---|---|---|---|\n"
        + "\n".join(rows),
    ]
    if line.memory.largest:
        big = [
            f"| {format_size(a.bytes)} | {a.count:g} | {a.device} | `{a.op or '?'}` | {a.shapes} |"
            for a in line.memory.largest
        ]
        parts.append(
            "| largest | per call | device | op | input shapes |\n|---|---|---|---|---|\n"
            + "\n".join(big)
        )
    return "\n\n".join(parts)


def memory_sentences(report: Report, offset: int) -> list[str]:
    """For the verdict hover: the peak line, and the page faults per call."""
    memory = report.memory
    if memory is None:
        return []
    out = []
    if memory.peak_line is not None and memory.peak_bytes is not None:
        out.append(
            f"Memory peak: +{format_size(memory.peak_bytes)} above the call's start "
            f"({memory.peak_device or 'cpu'}), reached at line {memory.peak_line + offset}."
        )
    faults = memory.page_faults_per_call
    if faults is not None and memory.page_fault_us is not None:
        share = memory.page_fault_share
        out.append(
            f"{faults:.0f} page faults per call ≈ {format_duration(memory.page_fault_us)}"
            + (f" ({share * 100:.0f} % of the call)." if share is not None else ".")
        )
    return out
