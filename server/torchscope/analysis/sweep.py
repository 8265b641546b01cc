"""One function across input sizes: where it crosses from overhead-bound to compute-bound.

The guide's central lesson: a small call is all dispatch (the CPU launching ops), a big one is
all compute, and only measuring several sizes shows where the line is. Each point comes from a
full profile (its typed :class:`.report.Report`); this module reduces them to the table, finds the
crossover and renders the text. Pure Python, like the rest of ``analysis``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from .columns import median
from .formatting import format_duration, format_share
from .report import Report

COMPUTE_SHARE_CROSSOVER = 0.5
"""A size is compute-bound once at least half of each call is compute. On CPU that is the CPU
verdict's own line (dispatch share < 50 %, ``verdict.OVERHEAD_BOUND_DISPATCH_SHARE``); on a GPU
it is device time per call over unprofiled wall time per call."""


@dataclass(frozen=True)
class SweepPoint:
    """One size: unprofiled time per call, profiled CPU op time, device or compute time."""

    n: int
    median_us: Optional[float]
    cpu_us: Optional[float]
    device_us: Optional[float]
    compute_share: Optional[float]
    """Share of a call spent computing rather than dispatching (0-1)."""
    compute_us: Optional[float]
    """``median_us × compute_share``: the part of the call that is the work itself."""
    verdict: str
    headline: str = ""
    trace_path: Optional[str] = None
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.compute_share is not None

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` form: the size under ``N`` (as the issue's schema names it)."""
        data = asdict(self)
        return {"N": data.pop("n"), **data}


def _finite(value: Optional[float]) -> Optional[float]:
    """The number as the JSON carries it: NaN and inf are no number."""
    return value if value is not None and math.isfinite(value) else None


def compute_share(report: Report) -> Optional[float]:
    """Compute share of one profile (see :data:`COMPUTE_SHARE_CROSSOVER`)."""
    call_us = _finite(report.timing.median_us) if report.timing else None
    if report.device.kind == "cuda":
        device_us = _finite(report.verdict.device_us)
        if call_us is not None and call_us > 0 and device_us is not None:
            return max(0.0, min(1.0, device_us / call_us))
        return None
    overhead = _finite(report.verdict.overhead_share)
    if overhead is not None:
        return max(0.0, min(1.0, 1.0 - overhead))
    return None


def point_from_report(n: int, report: Report, trace_path: Optional[str] = None) -> SweepPoint:
    """One size's point from its profile's report."""
    call_us = _finite(report.timing.median_us) if report.timing else None
    share = compute_share(report)
    gpu = report.device.kind == "cuda"
    return SweepPoint(
        n=n,
        median_us=call_us,
        cpu_us=median([s.cpu_op_us for s in report.steps]) if report.steps else None,
        device_us=_finite(report.verdict.device_us) if gpu else 0.0,
        compute_share=share,
        compute_us=call_us * share if share is not None and call_us is not None else None,
        verdict=report.verdict.id,
        headline=report.verdict.headline,
        trace_path=trace_path,
    )


@dataclass
class Sweep:
    """One function across sizes: the points, the crossover and where the chart was written."""

    name: str
    """The size's placeholder name (``N``)."""
    call: str
    """The call template holding ``{name}``."""
    points: list[SweepPoint] = field(default_factory=list)
    crossover: Optional[int] = None
    chart_path: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        """The ``sweep`` object of ``profile --sweep --json``."""
        return {
            "name": self.name,
            "call": self.call,
            "points": [p.to_dict() for p in self.points],
            "crossover": self.crossover,
            "chart_path": self.chart_path,
        }


def failed_point(n: int, error: str) -> SweepPoint:
    return SweepPoint(n, None, None, None, None, None, "failed", error=error)


def crossover(points: list[SweepPoint]) -> Optional[int]:
    """The smallest size from which every larger measured size is compute-bound, provided some
    smaller size is not; None when all sizes sit on one side (no crossing inside the range)."""
    measured = sorted((p for p in points if p.ok), key=lambda p: p.n)
    found: Optional[int] = None
    for k in range(len(measured) - 1, -1, -1):
        share = measured[k].compute_share
        if share is None or share < COMPUTE_SHARE_CROSSOVER:
            break
        found = measured[k].n
    if found is None or found == measured[0].n:
        return None
    return found


def _us(value: Optional[float]) -> str:
    return format_duration(value) if value is not None else "—"


def _table(points: list[SweepPoint], name: str, device: str) -> list[list[str]]:
    """The head row, then one row per size (a failed size: its error's first line)."""
    compute = "device time" if device == "cuda" else "compute time"
    rows = [[name, "wall/call", "CPU ops (prof.)", compute, "compute", "verdict"]]
    for p in points:
        if p.error is not None:
            rows.append([str(p.n), "—", "—", "—", "—", f"failed: {p.error.splitlines()[0][:60]}"])
            continue
        time_us = p.device_us if device == "cuda" else p.compute_us
        share = format_share(p.compute_share) if p.compute_share is not None else "—"
        rows.append([str(p.n), _us(p.median_us), _us(p.cpu_us), _us(time_us), share, p.verdict])
    return rows


def crossover_text(points: list[SweepPoint], cross: Optional[int], name: str = "N") -> str:
    """Where the function turns compute-bound, in one line ('' when no size could run)."""
    if cross is not None:
        below = [p.n for p in points if p.ok and p.n < cross]
        return (
            f"crossover: compute-bound from {name}={cross} (overhead-bound at {name}={below[-1]})"
            if below
            else f"crossover: compute-bound from {name}={cross}"
        )
    ok = [p for p in points if p.ok]
    if ok and all((p.compute_share or 0) >= COMPUTE_SHARE_CROSSOVER for p in ok):
        return f"crossover: none — compute-bound at every size (from {name}={ok[0].n})"
    if ok:
        return f"crossover: none — not compute-bound up to {name}={ok[-1].n}: try larger sizes"
    return ""


def render_sweep(
    points: list[SweepPoint], cross: Optional[int], name: str = "N", device: str = "cpu"
) -> str:
    """The table the CLI prints: one row per size, then the crossover."""
    rows = _table(points, name, device)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in rows
    ]
    lines = [line.rstrip() for line in lines]
    cross_line = crossover_text(points, cross, name)
    return "\n".join([*lines, cross_line] if cross_line else lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def sweep_markdown(qualname: str, sweep: Sweep, device: str = "cpu") -> str:
    """The sweep as Markdown (the editor's panel): the same table and crossover as
    :func:`render_sweep`, with the call and the chart's path."""
    head, *rows = _table(sweep.points, sweep.name, device)
    table = ["| " + " | ".join(head) + " |", "|---:|" + "---:|" * (len(head) - 2) + "---|"]
    for row in rows:
        bold = row[0] == str(sweep.crossover)
        cells = [f"**{c}**" if bold else c for c in row]
        table.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    parts = [
        f"## `{qualname}` across {sweep.name}",
        f"`{sweep.call}`",
        "\n".join(table),
        crossover_text(sweep.points, sweep.crossover, sweep.name),
    ]
    if sweep.chart_path:
        parts.append(f"Chart: `{sweep.chart_path}`")
    return "\n\n".join(p for p in parts if p)
