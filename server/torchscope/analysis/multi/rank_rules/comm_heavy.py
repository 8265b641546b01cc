"""``comm-heavy`` across ranks: the communication share of the step on each rank
(``RankSummary.comm_us``, which also counts a CPU backend's collectives such as gloo's), with
the threshold of the single-trace rule (``verdict/findings.CommHeavyFinding``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...formatting import format_duration, format_share
from ...index.columns import median
from ...results import Finding
from ...verdict.findings import CommHeavyFinding
from .base import RankRule

if TYPE_CHECKING:
    from ..rank_model import RankContext


class CommHeavyAcrossRanks(CommHeavyFinding, RankRule):
    """Communication share of the step on each rank; one finding, for the rank with the
    largest share, when the median rank's share is over ``SHARE``."""

    def skip(self, rctx: RankContext) -> str | None:
        if not any(r.comm_us > 0 for r in rctx.ranks):
            return "no communication on any rank"
        return None

    def match(self, rctx: RankContext) -> list[Finding]:
        ranks = [r for r in rctx.ranks if r.wall_us > 0]
        if not ranks or median([r.comm_us / r.wall_us for r in ranks]) < self.SHARE:
            return []
        top = max(ranks, key=lambda r: (r.comm_us / r.wall_us, -r.rank))
        # A collective that straddles a step's edge is counted whole, so comm_us can pass the
        # steps' wall time by a little (101 % seen on 2 gloo ranks): a share of the step is at
        # most all of it.
        share = min(1.0, top.comm_us / top.wall_us)
        exposed = min(1.0, top.exposed_comm_us / top.wall_us)
        return [
            self.rank_finding(
                top.rank,
                f"communication takes {format_share(share)} of each step on rank {top.rank} "
                f"({format_duration(top.comm_us)}, {format_duration(top.wait_us)} of it waiting "
                f"for other ranks, {format_share(exposed)} of the step not overlapped with "
                "compute): tune DDP bucket_cap_mb, accumulate gradients under no_sync(), or "
                "balance the ranks",
                top.exposed_comm_us,
                severity="warning" if exposed >= self.WARNING_EXPOSED else "information",
                comm_share=share,
                exposed_share=exposed,
                comm_us=top.comm_us,
                wait_us=top.wait_us,
                exposed_us=top.exposed_comm_us,
            )
        ]


RULE = CommHeavyAcrossRanks()
