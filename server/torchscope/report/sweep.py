"""The size sweep in words: the table the CLI prints and the Markdown of the editor's panel,
one row per size, then where the function stops being overhead-bound (the chart is
:mod:`.sweep_chart`)."""

from __future__ import annotations

import os
from typing import Optional

from torchscope.analysis import (
    SELF_CHECK,
    Sweep,
    SweepPoint,
    past_overhead,
    self_check_sweep,
)
from torchscope.analysis.formatting import format_duration, format_share


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
        verdict = p.verdict if p.stable else f"{p.verdict} (unstable)"
        rows.append([str(p.n), _us(p.median_us), _us(p.cpu_us), _us(time_us), share, verdict])
    return rows


def stability_lines(points: list[SweepPoint], name: str = "N") -> list[str]:
    """One line per unstable row (issue 54): why, and that the crossover leaves it out."""
    return [
        f"{name}={p.n}: {p.unstable_reason or 'unstable'} (not used for the crossover)"
        for p in points
        if p.ok and not p.stable
    ]


def step_lines(sweep: Sweep) -> list[str]:
    """Each pair of adjacent sizes as the A/B engine words it:
    ``N 8 → 16: slower: 2.1× slower (1.9×–2.3× slower)``."""
    return [
        f"{sweep.name} {s.n_from} → {s.n_to}: {s.comparison.decision}: {s.comparison.phrase}"
        for s in sweep.steps
    ]


def crossover_text(points: list[SweepPoint], cross: Optional[int], name: str = "N") -> str:
    """Where the function stops being overhead-bound, in one line, from the rows' own verdicts
    ('' when no size could run)."""
    ok = sorted((p for p in points if p.counted), key=lambda p: p.n)
    if cross is not None:
        at = next(p for p in ok if p.n == cross)
        below = [p.n for p in ok if p.n < cross]
        where = f" (overhead-bound at {name}={below[-1]})" if below else ""
        return f"crossover: {at.verdict} from {name}={cross}{where}"
    if ok and all(past_overhead(p) for p in ok):
        kinds = ", ".join(dict.fromkeys(p.verdict for p in ok))
        return f"crossover: none — not overhead-bound at any size ({kinds} from {name}={ok[0].n})"
    if ok:
        last = ok[-1]
        if past_overhead(last):
            return f"crossover: none — the verdicts go back and forth up to {name}={last.n}"
        return f"crossover: none — still overhead-bound at {name}={last.n}: {_remedy(last)}"
    return ""


def _remedy(last: SweepPoint) -> str:
    """What to try when the largest size is still overhead-bound, by the overhead its row
    names: larger sizes cure dispatch and a small op's fixed cost, not the threads or page
    faults (issue 55: "try larger sizes" under rows about threads and page faults)."""
    if last.cause == "threads":
        return "its overhead is the intra-op threads, not the size: torch.set_num_threads(1)"
    if last.cause == "page-faults":
        return (
            "its overhead is page faults (fresh memory on every call), not the size: reuse "
            "buffers (out=, in-place ops)"
        )
    return "try larger sizes"


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
    lines = [line.rstrip() for line in lines] + stability_lines(points, name)
    cross_line = crossover_text(points, cross, name)
    self_check_sweep(points, cross_line)
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
        "\n\n".join(stability_lines(sweep.points, sweep.name)),
        crossover_text(sweep.points, sweep.crossover, sweep.name),
        "\n\n".join(step_lines(sweep)),
    ]
    if sweep.chart_path:
        parts.append(f"Chart: `{sweep.chart_path}`")
    return "\n\n".join(p for p in parts if p)


def _check(sweep: Sweep) -> None:
    """The sweep's rows against the crossover line it prints (``consistency.sweep_problems``)."""
    self_check_sweep(sweep.points, crossover_text(sweep.points, sweep.crossover, sweep.name))


if os.environ.get(SELF_CHECK) == "1":
    from torchscope.protocol import register_check

    register_check(Sweep, _check)
