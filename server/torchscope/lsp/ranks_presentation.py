"""How a multi-process profile reads in the editor: the verdict names the slowest rank, and
the ``def`` hover carries the per-rank table and the cross-rank findings."""

from __future__ import annotations

from torchscope.analysis import format_duration
from torchscope.analysis.ranks import RanksReport
from torchscope.lsp.results import Profile


def headline(profile: Profile) -> str:
    """The verdict headline; for several ranks, the slowest rank's, naming it."""
    verdict = profile.report.verdict.headline
    return profile.ranks.titled(verdict) if profile.ranks is not None else verdict


def ranks_hover(view: RanksReport) -> str:
    """A Markdown table, one row per rank (µs per step), then the cross-rank findings."""
    header = "| rank | wall | compute | comm | waiting | exposed | hidden |"
    rows = [header, "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in view.ranks:
        name = f"**{r.rank}** (slowest)" if r.rank == view.slowest else str(r.rank)
        cells = [r.wall_us, r.compute_us, r.comm_us, r.wait_us, r.exposed_comm_us]
        cells.append(r.hidden_comm_us)
        rows.append(f"| {name} | " + " | ".join(format_duration(c) for c in cells) + " |")
    parts = [
        f"**{len(view.ranks)} ranks** (per step; collectives aligned by {view.alignment})",
        "\n".join(rows),
    ]
    parts += [f"- **{f.rule}** (rank {f.details['rank']}): {f.message}" for f in view.findings]
    return "\n\n".join(parts)
