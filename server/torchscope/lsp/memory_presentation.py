"""Memory in the editor: the ``+48 MB · 3 allocs`` inlay label, the per-device hover table
with the largest allocations, and the verdict hover's peak and page-fault sentences."""

from __future__ import annotations

from typing import Any, Optional

from torchscope.analysis import format_duration

#: Lines allocating less than this per call get no memory hint (the hover still shows it).
MIN_HINT_BYTES = 1_000_000


def format_size(n: float) -> str:
    """Decimal units as the hints show them: ``48 MB``, ``1.5 kB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if abs(value) >= 10 else f"{value:.1f} {unit}"
    return f"{n:.0f} B"


def _devices(line: dict[str, Any]) -> dict[str, dict[str, Any]]:
    memory = line.get("memory")
    if not isinstance(memory, dict) or not isinstance(memory.get("device"), dict):
        return {}
    return dict(memory["device"])


def memory_label(line: dict[str, Any], stale: bool) -> Optional[str]:
    """``  +48 MB · 3 allocs`` (all devices together, per call); None below the threshold."""
    devices = _devices(line)
    total = sum(float(d.get("alloc_bytes", 0.0)) for d in devices.values())
    allocs = sum(float(d.get("allocs", 0.0)) for d in devices.values())
    if total < MIN_HINT_BYTES:
        return None
    count = f"{allocs:.0f}" if allocs >= 1 else f"{allocs:.1f}"
    label = f"  +{format_size(total)} · {count} alloc{'s' if count != '1' else ''}"
    alive = sum(float(d.get("retained_bytes", 0.0)) for d in devices.values())
    if any(d.get("leaks_every_call") for d in devices.values()):
        label += f" · leaks {format_size(alive)}"
    return label + " (stale)" if stale else label


def memory_lines(report: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """(line entry, label) for every line worth a memory hint."""
    out = []
    for line in report.get("lines", []):
        label = memory_label(line, False)
        if label is not None:
            out.append((line, label))
    return out


def memory_hover(line: dict[str, Any]) -> Optional[str]:
    """Markdown: per device allocated / allocations / alive after the call, then the largest
    allocations with the op and input shapes that made them."""
    devices = _devices(line)
    if not devices:
        return None
    rows = [
        f"| {name} | {format_size(d['alloc_bytes'])} | {d['allocs']:g} | "
        f"{format_size(d['alive_bytes'])} |"
        for name, d in devices.items()
    ]
    parts = [
        "**Memory per call**",
        "| device | allocated | allocations | alive after the call |\n|---|---|---|---|\n"
        + "\n".join(rows),
    ]
    largest = line["memory"].get("largest") or []
    if largest:
        big = [
            f"| {format_size(a['bytes'])} | {a['count']:g} | {a['device']} | "
            f"`{a['op'] or '?'}` | {a['shapes']} |"
            for a in largest
        ]
        parts.append(
            "| largest | per call | device | op | input shapes |\n|---|---|---|---|---|\n"
            + "\n".join(big)
        )
    return "\n\n".join(parts)


def memory_sentences(report: dict[str, Any], offset: int) -> list[str]:
    """For the verdict hover: the peak line, and the page faults per call."""
    memory = report.get("memory")
    if not isinstance(memory, dict):
        return []
    out = []
    if memory.get("peak_line") is not None and memory.get("peak_bytes") is not None:
        out.append(
            f"Memory peak: +{format_size(memory['peak_bytes'])} above the call's start "
            f"({memory.get('peak_device') or 'cpu'}), reached at line "
            f"{memory['peak_line'] + offset}."
        )
    faults = memory.get("page_faults_per_call")
    if faults is not None and memory.get("page_fault_us") is not None:
        share = memory.get("page_fault_share")
        out.append(
            f"{faults:.0f} page faults per call ≈ {format_duration(memory['page_fault_us'])}"
            + (f" ({share * 100:.0f} % of the call)." if share is not None else ".")
        )
    return out
