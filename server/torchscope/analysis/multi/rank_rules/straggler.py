"""``straggler``: a rank that needs more time per step than the median rank.

Every rank of a synchronous job finishes a step together, so wall times alone hide the slow
rank: the others absorb its extra time as waiting inside their collectives. A rank's *busy*
time is its step minus that waiting (``RankSummary.busy_us``); a rank whose busy time exceeds
the ranks' median by more than ``STRAGGLER_SHARE`` of the median step is the straggler, and the
finding says where its extra time goes (compute or communication). HolisticTraceAnalysis and
TraceLens flag stragglers the same way, from collective wait times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...formatting import format_duration, format_share
from ...index.columns import median
from ...results import Finding
from .base import RankRule

if TYPE_CHECKING:  # only annotations: analysing one trace never imports rank_model
    from ..rank_model import RankContext

STRAGGLER_SHARE = 0.10
"""Busy time over the median rank's by more than 10 % of the median step."""


class Straggler(RankRule):
    """The slowest rank, when it is slower than the median by more than the threshold."""

    id = "straggler"
    title = "One rank holds the others back"
    source = "HolisticTraceAnalysis straggler analysis; TraceLens NCCL analyser"

    def match(self, rctx: RankContext) -> list[Finding]:
        ranks = rctx.ranks
        busy = median([r.busy_us for r in ranks])
        wall = median([r.wall_us for r in ranks])
        slow = max(ranks, key=lambda r: (r.busy_us, -r.rank))
        extra = slow.busy_us - busy
        if wall <= 0 or extra <= STRAGGLER_SHARE * wall:
            return []
        d_compute = slow.compute_us - median([r.compute_us for r in ranks])
        d_comm = (slow.comm_us - slow.wait_us) - median([r.comm_us - r.wait_us for r in ranks])
        where = "compute" if d_compute >= d_comm else "communication"
        others = median([r.wait_us for r in ranks if r.rank != slow.rank])
        return [
            self.rank_finding(
                slow.rank,
                f"rank {slow.rank} is the straggler: it needs {format_duration(slow.busy_us)} "
                f"per step where the median rank needs {format_duration(busy)} "
                f"(+{format_duration(extra)}, {format_share(extra / wall)} of the step), mostly "
                f"in {where} (compute {d_compute:+,.0f} µs, communication {d_comm:+,.0f} µs); "
                f"the other ranks wait {format_duration(others)} per step for it: balance "
                "the work or the data across ranks",
                extra,
                extra_us=extra,
                busy_us=slow.busy_us,
                median_busy_us=busy,
                extra_compute_us=d_compute,
                extra_comm_us=d_comm,
                others_wait_us=others,
            )
        ]


RULE = Straggler()
