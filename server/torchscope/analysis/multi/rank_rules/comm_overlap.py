"""``comm-overlap``: how much of the communication is exposed (not hidden under compute).

Communication that runs while compute runs costs nothing; the exposed part adds to every
step. Reported for the rank with the most exposed communication when at least
``EXPOSED_SHARE`` of its communication is exposed (HolisticTraceAnalysis'
communication/computation overlap). Hidden and exposed are computed per step; the finding gives
the all-steps share with the per-step range. Remedies: DDP's gradient bucketing overlaps the
all-reduce with the backward pass (``bucket_cap_mb``), ``async_op=True`` collectives waited on
later, FSDP prefetching.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...formatting import format_duration, format_share
from ...results import Finding
from .base import RankRule

if TYPE_CHECKING:  # only annotations: analysing one trace never imports rank_model
    from ..rank_model import RankContext, RankSummary

EXPOSED_SHARE = 0.25
"""At least a quarter of the rank's communication not overlapped with compute."""


def _hidden_details(row: RankSummary) -> dict[str, float]:
    """The all-steps hidden share and its per-step range, where known."""
    found = {
        "hidden_share": row.hidden_share,
        "hidden_share_min": row.hidden_share_min,
        "hidden_share_max": row.hidden_share_max,
    }
    return {k: v for k, v in found.items() if v is not None}


class CommOverlap(RankRule):
    """Exposed versus hidden communication, on the most exposed rank."""

    id = "comm-overlap"
    title = "Communication is not hidden under compute"
    severity = "information"
    source = "HolisticTraceAnalysis communication/computation overlap"

    def skip(self, rctx: RankContext) -> str | None:
        if not any(r.comm_us > 0 for r in rctx.ranks):
            return "no communication on any rank"
        return None

    def match(self, rctx: RankContext) -> list[Finding]:
        worst = max(rctx.ranks, key=lambda r: (r.exposed_comm_us, -r.rank))
        if worst.comm_us <= 0 or worst.exposed_comm_us < EXPOSED_SHARE * worst.comm_us:
            return []
        share = worst.exposed_comm_us / worst.comm_us
        hidden = ""
        if worst.hidden_share is not None:
            low, high = worst.hidden_share_min, worst.hidden_share_max
            spread = ""
            if low is not None and high is not None:
                a, b = format_share(low), format_share(high)
                spread = f", {a} per step" if a == b else f", {a}–{b} per step"
            hidden = f" ({format_share(worst.hidden_share)} of all steps' communication{spread})"
        return [
            self.rank_finding(
                worst.rank,
                f"rank {worst.rank}: {format_duration(worst.exposed_comm_us)} of its "
                f"{format_duration(worst.comm_us)} communication per step "
                f"({format_share(share)}) is exposed, {format_duration(worst.hidden_comm_us)} "
                f"hidden under compute{hidden}: overlap it (DDP bucketing, async_op=True and wait "
                "later, FSDP prefetch)",
                worst.exposed_comm_us,
                None,
                exposed_share=share,
                exposed_us=worst.exposed_comm_us,
                hidden_us=worst.hidden_comm_us,
                comm_us=worst.comm_us,
                **_hidden_details(worst),
            )
        ]


RULE = CommOverlap()
