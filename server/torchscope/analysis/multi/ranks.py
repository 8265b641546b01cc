"""The cross-rank view: every rank's trace analysed (in parallel), aligned on collectives.

    view = analyze_ranks(["rank0.json.gz", "rank1.json.gz"])   # -> RanksReport
    to_builtins(view.shown)  # the slowest rank's report + "ranks" + cross-rank findings
    render_ranks(view) # the text (torchscope.report.ranks)

Each trace is analysed in its own pool process (``concurrent.futures.ProcessPoolExecutor``,
one process per core) exactly as ``analyze_trace`` would; the pool hands back small
:class:`RankStats`. The ranks are then aligned on their collectives — by sequence number when
every collective carries one, else by the n-th collective of each name — to split each rank's
communication into waiting for the others and the rest.
"""

from __future__ import annotations

import glob
import multiprocessing
import multiprocessing.context
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...ingest import TraceError
from ...protocol import json_as
from ..formatting import format_duration
from ..index.columns import median
from ..results import Finding, Measurements, Report
from ..verdict.cost_basis import NOTE_START, profiled_cost_note
from .rank_model import RankContext, RankStats, RankSummary
from .rank_rules import run_rank_rules
from .rank_stats import measure_rank_file

TRACE_SUFFIXES = (".json", ".json.gz")


@dataclass(frozen=True)
class RankColumns:
    """What a multi-process report adds beside the slowest rank's: the per-rank table, which
    rank is the slowest, and how the collectives were aligned across ranks."""

    ranks: list[RankSummary]
    rank: int
    alignment: str
    aligned_collectives: int


@dataclass(frozen=True)
class RankedReport:
    report: Report = field(metadata=json_as(flatten=True))
    columns: RankColumns = field(metadata=json_as(flatten=True))


@dataclass
class RanksReport:
    """Every rank's report, its row of the per-rank table, and the cross-rank findings."""

    ranks: list[RankSummary]
    reports: dict[int, Report]
    findings: list[Finding]
    rules_skipped: dict[str, str]
    alignment: str
    aligned: int
    notes: list[str] = field(default_factory=list)

    @property
    def slowest(self) -> int:
        """The rank that needs the most time per step (ties: the lowest rank)."""
        return max(self.ranks, key=lambda r: (r.busy_us, -r.rank)).rank

    def merged(self, report: Report) -> Report:
        """The slowest rank's report with the cross-rank findings first (every finding names
        its ``rank``), their rules skipped and notes added, and the verdict naming the rank."""
        slow = self.slowest
        cross = [replace(f, rank=f.details.get("rank")) for f in self.findings]
        own = [replace(f, rank=slow) for f in report.findings]
        notes = [*report.notes, *self.notes]
        # a cross-rank finding may cost more than the call: the same note as a rank's own
        cost_note = profiled_cost_note(report.verdict, report.steps, cross + own)
        if cost_note is not None and not any(n.startswith(NOTE_START) for n in notes):
            notes.append(cost_note)
        return replace(
            report,
            findings=cross + own,
            rules_skipped={**report.rules_skipped, **self.rules_skipped},
            notes=notes,
            verdict=replace(report.verdict, headline=self.titled(report.verdict.headline)),
        )

    @property
    def columns(self) -> RankColumns:
        return RankColumns(self.ranks, self.slowest, self.alignment, self.aligned)

    @property
    def shown(self) -> RankedReport:
        """What ``analyze DIR --json`` prints: the merged slowest report and the columns."""
        return RankedReport(self.merged(self.reports[self.slowest]), self.columns)

    def titled(self, verdict_headline: str) -> str:
        """The slowest rank's verdict headline, preceded by which rank it is."""
        return f"{self.headline()} — rank {self.slowest}: {verdict_headline}"

    def headline(self) -> str:
        """``slowest of N ranks: rank R (busy X vs median Y)``."""
        slow = next(r for r in self.ranks if r.rank == self.slowest)
        mid = median([r.busy_us for r in self.ranks])
        return (
            f"slowest of {len(self.ranks)} ranks: rank {slow.rank} "
            f"({format_duration(slow.busy_us)} busy per step, median {format_duration(mid)})"
        )


def trace_files(folder: Path) -> list[Path]:
    """The trace files directly inside ``folder`` (``.json``/``.json.gz``), sorted by name."""
    if not folder.is_dir():
        raise TraceError(f"{folder} is not a folder of per-rank traces")
    found = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    if not found:
        raise TraceError(
            f"{folder} holds no trace files (*.json, *.json.gz): put each rank's trace there"
        )
    return found


def _traces_at(path: Path) -> list[Path]:
    if path.is_dir():
        return trace_files(path)
    if not path.exists():
        raise TraceError(f"{path}: no such trace file or folder")
    return [path]


def _expand(item: str) -> list[Path]:
    if not glob.has_magic(item) or Path(item).exists():
        return _traces_at(Path(item))
    matches = sorted(glob.glob(item, recursive=True))
    if not matches:
        raise TraceError(f"{item} matches no file or folder")
    return [t for m in matches for t in _traces_at(Path(m))]


def rank_paths(items: Sequence[str]) -> list[Path]:
    """The traces of ``torchscope analyze DIR|GLOB|FILE...``, in the order given: a folder
    stands for its trace files (``trace_files``), a glob (``*``, ``?``, ``[…]``, ``**``) for
    what it matches, sorted; a path named twice counts once."""
    seen: dict[Path, None] = {}
    for item in items:
        seen.update(dict.fromkeys(_expand(item)))
    if not seen:
        raise TraceError("no per-rank traces to analyse")
    return list(seen)


def _pool_context() -> multiprocessing.context.BaseContext:
    """``fork`` where this process runs one thread (the CLI): no start-up cost, and the
    caller's ``__main__`` is not run again. ``spawn`` where other threads run (the language
    server analyses in a thread): a forked child could inherit a lock another thread holds."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _measure_all(
    paths: Sequence[str], workers: int, measurements: Sequence[Measurements | None]
) -> list[RankStats]:
    if workers <= 1 or len(paths) <= 1:
        return [measure_rank_file(p, i, m) for i, (p, m) in enumerate(zip(paths, measurements))]
    with ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
        return list(pool.map(measure_rank_file, paths, range(len(paths)), measurements))


def unique_ranks(ranks: list[int], notes: list[str]) -> list[int]:
    """The ranks, numbered by file order instead when the traces' own ranks repeat."""
    if len(set(ranks)) == len(ranks):
        return ranks
    notes.append("the traces name the same rank more than once: ranks are numbered by file order")
    return list(range(len(ranks)))


def collective_table(stats: RankStats) -> dict[object, float]:
    """One rank's collectives as ``{alignment key: duration µs}``."""
    return {key: dur for key, _, dur in stats.collectives}


def shared_fastest(tables: Sequence[Mapping[object, float]]) -> dict[object, float]:
    """The keys found in every table, each with its shortest duration. Associative and
    commutative, so a cluster reduces it as a tree (``rank_cluster``) to the same result."""
    if not tables:
        return {}
    shared = set(tables[0]).intersection(*tables[1:])
    return {k: min(t[k] for t in tables) for k in shared}


def _per_step(values: list[float]) -> float:
    """All steps' total over the number of steps (0 with no steps)."""
    return sum(values) / len(values) if values else 0.0


def hidden_shares(comm: list[float], hidden: list[float]) -> dict[str, Any]:
    """The hidden communication of one rank: all steps' hidden time per step, its share of
    all steps' communication and the per-step range (steps without communication have no
    share)."""
    shares = [h / c for c, h in zip(comm, hidden) if c > 0]
    total = sum(comm)
    return {
        "hidden_comm_us": _per_step(hidden),
        "hidden_share": sum(hidden) / total if total > 0 else None,
        "hidden_share_min": min(shares) if shares else None,
        "hidden_share_max": max(shares) if shares else None,
    }


def summarize(stats: RankStats, fastest: Mapping[object, float]) -> RankSummary:
    """One rank's row: the step and its compute as medians of its steps; its communication,
    the hidden and exposed parts of it and the wait in the collectives shared by all ranks
    (``fastest``: ``shared_fastest`` over every rank) as all steps' totals per step, so
    ``comm_us = hidden_comm_us + exposed_comm_us`` and each is summed over the same steps
    (issue 40: medians of different steps did not add up, as ``comm-heavy`` had found)."""
    waits = [0.0] * len(stats.wall)
    for key, step, dur in stats.collectives:
        if key in fastest and 0 <= step < len(waits):
            waits[step] += dur - fastest[key]
    comm = _per_step(stats.comm)
    return RankSummary(
        rank=stats.rank,
        wall_us=median(stats.wall),
        compute_us=median(stats.compute),
        comm_us=comm,
        wait_us=min(_per_step(waits), comm),
        exposed_comm_us=_per_step(stats.exposed),
        trace_path=stats.path,
        **hidden_shares(stats.comm, stats.hidden),
    )


def reduce_ranks(
    ranks: list[RankSummary],
    sequenced: bool,
    aligned: int,
    reports: dict[int, Report],
    notes: list[str],
) -> RanksReport:
    """The cross-rank report from every rank's row (sorted by rank); ``sequenced``: every
    rank's collectives carry sequence numbers; ``aligned``: collectives shared by all."""
    how = "none" if not aligned else "sequence" if sequenced else "order"
    if how == "none" and len(ranks) > 1:
        notes.append("no collective is shared by all ranks: waiting time is not measured")
    findings, skipped = run_rank_rules(RankContext(ranks, how, aligned))
    return RanksReport(
        ranks=ranks,
        reports=reports,
        findings=findings,
        rules_skipped=skipped,
        alignment=how,
        aligned=aligned,
        notes=notes,
    )


def combine(stats: list[RankStats]) -> RanksReport:
    """The cross-rank report from every rank's stats."""
    notes: list[str] = []
    for s, rank in zip(stats, unique_ranks([s.rank for s in stats], notes)):
        s.rank = rank
    stats = sorted(stats, key=lambda s: s.rank)
    fastest = shared_fastest([collective_table(s) for s in stats])
    return reduce_ranks(
        [summarize(s, fastest) for s in stats],
        all(s.sequenced for s in stats),
        len(fastest),
        {s.rank: s.report for s in stats},
        notes,
    )


def analyze_ranks(
    paths: Sequence[str | os.PathLike[str]],
    workers: int | None = None,
    measurements: Sequence[Measurements | None] | None = None,
) -> RanksReport:
    """Analyse every rank's trace (``workers`` processes; default one per core) and combine
    them; ``measurements[i]`` are the unprofiled numbers of ``paths[i]``'s rank, if any.
    Raises :class:`TraceError` naming the trace that could not be read."""
    names = [str(p) for p in paths]
    if not names:
        raise TraceError("no per-rank traces to analyse")
    n = min(len(names), workers if workers is not None else (os.cpu_count() or 1))
    return combine(_measure_all(names, n, measurements or [None] * len(names)))


def analyze_folder(folder: str | os.PathLike[str], workers: int | None = None) -> RanksReport:
    """``analyze_ranks`` over the trace files of one folder."""
    return analyze_ranks(trace_files(Path(folder)), workers)
