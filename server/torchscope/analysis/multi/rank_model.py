"""The cross-rank view's data: one row per rank, and what the cross-rank rules read.

``RankSummary`` is the output contract's ``ranks`` row (all times µs per step: ``wall_us`` and
``compute_us`` the median over the rank's analysed steps; the communication figures all
steps' totals over the number of steps, so they add up and come from the same steps):

- ``wall_us``: the step (one call of the profiled function) as the rank saw it;
- ``comm_us``: collective communication — the union of NCCL/RCCL kernels on a GPU trace, of
  the backend's collective ranges (``gloo:all_reduce`` …) on a CPU trace;
- ``wait_us``: the part of ``comm_us`` spent waiting for other ranks: for each collective
  aligned across ranks, its duration minus the shortest duration any rank had for it (the
  last rank to arrive waits least; TraceLens' NCCL analyser splits it the same way);
- ``compute_us``: the union of the non-communication work (kernels on a GPU, ops on a CPU);
- ``exposed_comm_us``: communication not overlapped with that compute (the sum over steps of
  each step's communication minus its hidden part, per step);
- ``hidden_comm_us``: communication overlapped with compute (the sum over steps of what was
  hidden, per step: ``comm_us = hidden_comm_us + exposed_comm_us``, as ``comm-heavy`` over
  one trace; medians of different steps did not add up, issue 40);
- ``hidden_share``: all steps' hidden communication over all steps' communication (None: no
  communication), with ``hidden_share_min``/``hidden_share_max`` the per-step range (over the
  steps with communication).

Communication and compute are clipped to each step's CPU window: overlap is a property of the
device timeline, and the all-steps total does not depend on where the steps are cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import Report


@dataclass(frozen=True)
class RankSummary:
    """One rank's row of the per-rank table (µs per step)."""

    rank: int
    wall_us: float
    compute_us: float
    comm_us: float
    wait_us: float
    exposed_comm_us: float
    trace_path: str
    hidden_comm_us: float = 0.0
    hidden_share: float | None = None
    hidden_share_min: float | None = None
    hidden_share_max: float | None = None

    @property
    def busy_us(self) -> float:
        """The step without the time spent waiting for other ranks: what this rank needs."""
        return max(0.0, self.wall_us - self.wait_us)


@dataclass(frozen=True)
class RankContext:
    """What the cross-rank rules read: every rank's row and how the ranks were aligned."""

    ranks: list[RankSummary]
    alignment: str
    """``sequence`` (collectives' sequence numbers), ``order`` (the n-th collective of each
    name), or ``none`` (no collective shared by all ranks)."""
    aligned: int
    """Collectives found on every rank."""

    def by_rank(self, rank: int) -> RankSummary:
        """The row of ``rank``."""
        return next(r for r in self.ranks if r.rank == rank)


@dataclass
class RankStats:
    """What one rank's analysis hands back to the process that combines the ranks (picklable,
    small: per-step numbers and the collectives, never the trace)."""

    rank: int
    path: str
    report: Report
    wall: list[float] = field(default_factory=list)
    compute: list[float] = field(default_factory=list)
    comm: list[float] = field(default_factory=list)
    exposed: list[float] = field(default_factory=list)
    hidden: list[float] = field(default_factory=list)
    collectives: list[tuple[object, int, float]] = field(default_factory=list)
    """``(alignment key, step index, duration µs)`` per collective, in time order; the key is
    the sequence number when ``sequenced``, else ``(name, n-th of that name)``."""
    sequenced: bool = False
    rank_source: str = "trace"
    """Where the rank number came from: ``trace`` (``distributedInfo``), ``file``, ``order``."""


@dataclass(frozen=True)
class RankDigest:
    """What one rank's task on a Dask cluster hands back to the client (``rank_cluster``): a
    fixed number of fields whatever the size of the trace. The per-step lists of
    :class:`RankStats` are already reduced to the row's medians (waiting included, against the
    cluster-wide fastest durations), the collectives to one flag; the report stays on the
    worker."""

    summary: RankSummary
    sequenced: bool
    """Every collective of this rank carries a sequence number."""
