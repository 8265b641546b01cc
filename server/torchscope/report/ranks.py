"""A multi-process profile in words: the per-rank table and the cross-rank findings, as text
(the CLI) and as Markdown (the editor's ``def`` hover)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchscope.analysis import median
from torchscope.analysis.formatting import format_duration, format_share

if TYPE_CHECKING:
    from torchscope.analysis import RanksReport, RankSummary


def hidden_cell(r: RankSummary) -> str:
    """Hidden communication per step, with the all-steps share and the per-step range."""
    cell = format_duration(r.hidden_comm_us)
    if r.hidden_share is None or r.hidden_share_min is None or r.hidden_share_max is None:
        return cell
    low, high = format_share(r.hidden_share_min), format_share(r.hidden_share_max)
    spread = low if low == high else f"{low}–{high}"
    return f"{cell} ({format_share(r.hidden_share)}; steps {spread})"


def render_ranks(view: RanksReport) -> str:
    """The per-rank table and the cross-rank findings, as text."""
    rows = [
        f"{'rank':>4} {'wall':>9} {'compute':>9} {'comm':>9} {'waiting':>9} "
        f"{'exposed':>9} {'hidden':>9}"
    ]
    for r in view.ranks:
        mark = " ◀ slowest" if r.rank == view.slowest and len(view.ranks) > 1 else ""
        rows.append(
            f"{r.rank:>4} {format_duration(r.wall_us):>9} {format_duration(r.compute_us):>9} "
            f"{format_duration(r.comm_us):>9} {format_duration(r.wait_us):>9} "
            f"{format_duration(r.exposed_comm_us):>9} {hidden_cell(r):>9}{mark}"
        )
    lines = [
        view.headline(),
        "per rank (µs per step; medians over steps; hidden: share of all steps' "
        "communication, and the per-step range):",
        *rows,
    ]
    lines.append(f"collectives aligned by {view.alignment} ({view.aligned} shared by all ranks)")
    for f in view.findings:
        share = ""
        wall = view.reports[f.details["rank"]].steps
        if wall:
            share = f" [{format_share(f.cost_us / median([s.wall_us for s in wall]))}]"
        lines.append(f"  {f.severity:<11} {f.rule}{share}: {f.message}")
    lines += [f"note: {n}" for n in view.notes]
    return "\n".join(lines)


def ranks_markdown(view: RanksReport) -> str:
    """A Markdown table, one row per rank (µs per step), then the cross-rank findings."""
    header = "| rank | wall | compute | comm | waiting | exposed | hidden |"
    rows = [header, "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in view.ranks:
        name = f"**{r.rank}** (slowest)" if r.rank == view.slowest else str(r.rank)
        cells = [r.wall_us, r.compute_us, r.comm_us, r.wait_us, r.exposed_comm_us]
        texts = [format_duration(c) for c in cells] + [hidden_cell(r)]
        rows.append(f"| {name} | " + " | ".join(texts) + " |")
    parts = [
        f"**{len(view.ranks)} ranks** (per step; collectives aligned by {view.alignment})",
        "\n".join(rows),
    ]
    parts += [f"- **{f.rule}** (rank {f.details['rank']}): {f.message}" for f in view.findings]
    return "\n\n".join(parts)
