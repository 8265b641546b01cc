"""``imbalance``: compute per step differs across ranks.

Data-parallel ranks should do the same work; when the most loaded rank computes more than
``IMBALANCE_SHARE`` above the least loaded, the job runs at the pace of the most loaded one
(uneven batches, uneven sequence lengths, rank-dependent code paths, embedding tables that
are sharded unevenly). HolisticTraceAnalysis' temporal breakdown across ranks shows the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...formatting import format_duration, format_share
from ...index.columns import median
from ...results import Finding
from .base import RankRule

if TYPE_CHECKING:  # only annotations: analysing one trace never imports rank_model
    from ..rank_model import RankContext

IMBALANCE_SHARE = 0.10
"""Most over least loaded rank's compute by more than 10 % of the median rank's compute."""


class Imbalance(RankRule):
    """The spread of compute per step across ranks."""

    id = "imbalance"
    title = "Ranks compute different amounts"
    source = "HolisticTraceAnalysis temporal breakdown across ranks"

    def match(self, rctx: RankContext) -> list[Finding]:
        ranks = rctx.ranks
        mid = median([r.compute_us for r in ranks])
        most = max(ranks, key=lambda r: (r.compute_us, -r.rank))
        least = min(ranks, key=lambda r: (r.compute_us, r.rank))
        spread = most.compute_us - least.compute_us
        if mid <= 0 or spread <= IMBALANCE_SHARE * mid:
            return []
        return [
            self.rank_finding(
                most.rank,
                f"rank {most.rank} computes {format_duration(most.compute_us)} per step, rank "
                f"{least.rank} {format_duration(least.compute_us)} ({format_share(spread / mid)} "
                "of the median rank's compute): give the ranks equal work (batch sizes, "
                "sequence lengths, shards)",
                most.compute_us - mid,
                spread_us=spread,
                max_compute_us=most.compute_us,
                min_compute_us=least.compute_us,
                median_compute_us=mid,
            )
        ]


RULE = Imbalance()
