"""The cross-rank view on a Dask cluster: one task per trace on the workers, the reduce on the
client (``torchscope analyze DIR --scheduler ADDRESS``).

    with connect("tcp://scheduler:8786") as client:
        view = analyze_ranks_on(client, rank_paths(["traces/"]))

The results are those of ``ranks.analyze_ranks`` (the local process pool), computed by the same
functions, but nothing that grows with a trace reaches the client:

1. per trace, on a worker, ``measure_rank_file``: its :class:`RankStats` (the report, per-step
   lists, one entry per collective) stays there, a future;
2. the collectives shared by every rank, each with its shortest duration (``shared_fastest``),
   reduced as a tree on the workers, ``FAN_IN`` tables per task;
3. per rank, on a worker, ``digest``: its :class:`RankDigest` (the row of the per-rank table and
   one flag), which the client gathers and runs the cross-rank rules over;
4. the reports the output shows: the slowest rank's and those of the ranks the cross-rank
   findings name (at most one per cross-rank rule); the others stay on the workers and are
   released with the rest.

So the client's memory grows with the number of ranks (a digest and a few futures each), never
with the events of a trace. The tasks are torchscope's functions, pickled by name: **the workers
must import torchscope** (the same version). They read each trace at its absolute path, so they
must see the same files (one host, or a shared file system). Importing this module imports no
Dask; ``connect`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...ingest import TraceError
from .rank_model import RankDigest, RankStats
from .rank_stats import measure_rank_file
from .ranks import (
    RanksReport,
    collective_table,
    reduce_ranks,
    shared_fastest,
    summarize,
    unique_ranks,
)

if TYPE_CHECKING:
    from distributed import Client, Future

    from ..results import Report

#: ``pip install`` of the optional dependency, named in the message when Dask is missing.
INSTALL = 'pip install "torchscope[cluster]"'
#: Collective tables merged per task of the tree reduction.
FAN_IN = 8


class ClusterError(Exception):
    """The Dask cluster cannot be used: Dask is not installed, the scheduler cannot be reached,
    or the cluster failed. The message names the problem and the fix."""


# -- the tasks (run on the workers) -------------------------------------------------------------


def measure(path: str, shown: str, fallback_rank: int) -> RankStats:
    """``measure_rank_file`` of the absolute ``path``, reported under the path as given (in
    its row and in the message of a trace that cannot be read, as on the local pool)."""
    try:
        stats = measure_rank_file(path, fallback_rank)
    except TraceError as exc:
        raise TraceError(str(exc).replace(path, shown)) from None
    stats.path = shown
    return stats


def tables_of(*stats: RankStats) -> dict[object, float]:
    """The first level of the tree: the shared collectives of a few ranks."""
    return shared_fastest([collective_table(s) for s in stats])


def merge_tables(*tables: dict[object, float]) -> dict[object, float]:
    """A level above: the shared collectives of a few tables."""
    return shared_fastest(tables)


def digest(stats: RankStats, fastest: dict[object, float]) -> RankDigest:
    """One rank's bounded summary (``summarize`` against every rank's fastest durations)."""
    return RankDigest(summarize(stats, fastest), stats.sequenced)


def report_of(stats: RankStats) -> Report:
    """The rank's report, without the rest of its stats."""
    return stats.report


# -- the client ---------------------------------------------------------------------------------


def submit_ranks(
    client: Client, paths: Sequence[str | os.PathLike[str]]
) -> list[Future[RankStats]]:
    """One ``measure`` task per trace; the futures of their :class:`RankStats`."""
    names = [str(p) for p in paths]
    if not names:
        raise TraceError("no per-rank traces to analyse")
    absolute = [os.path.abspath(n) for n in names]
    futures: list[Future[RankStats]] = client.map(
        measure, absolute, names, range(len(names)), pure=False
    )
    return futures


def _fastest(client: Client, stats: list[Future[RankStats]]) -> Future[dict[object, float]]:
    level = [
        client.submit(tables_of, *stats[i : i + FAN_IN], pure=False)
        for i in range(0, len(stats), FAN_IN)
    ]
    while len(level) > 1:
        level = [
            client.submit(merge_tables, *level[i : i + FAN_IN], pure=False)
            for i in range(0, len(level), FAN_IN)
        ]
    return level[0]


def reduce_on_cluster(client: Client, stats: list[Future[RankStats]]) -> RanksReport:
    """The cross-rank report from the futures of ``submit_ranks``: everything but the digests
    and the shown reports is computed on the workers (see the module docstring)."""
    fastest = _fastest(client, stats)
    digests: list[RankDigest] = client.gather(
        client.map(digest, stats, fastest=fastest, pure=False)
    )
    aligned: int = client.submit(len, fastest, pure=False).result()
    notes: list[str] = []
    numbers = unique_ranks([d.summary.rank for d in digests], notes)
    order = sorted(range(len(digests)), key=lambda i: numbers[i])
    rows = [replace(digests[i].summary, rank=numbers[i]) for i in order]
    view = reduce_ranks(rows, all(d.sequenced for d in digests), aligned, {}, notes)
    shown = sorted({view.slowest, *(f.details["rank"] for f in view.findings)})
    where = {rank: i for i, rank in enumerate(numbers)}
    reports: list[Report] = client.gather(
        [client.submit(report_of, stats[where[r]], pure=False) for r in shown]
    )
    view.reports = dict(zip(shown, reports))
    return view


def analyze_ranks_on(client: Client, paths: Sequence[str | os.PathLike[str]]) -> RanksReport:
    """``analyze_ranks`` on the cluster of ``client``; raises :class:`TraceError` naming a trace
    that could not be read, :class:`ClusterError` when the cluster fails."""
    stats = submit_ranks(client, paths)
    try:
        return reduce_on_cluster(client, stats)
    except TraceError:
        raise
    except Exception as exc:  # a lost worker, a lost connection: one message, no traceback
        raise ClusterError(_failure(exc)) from exc
    finally:
        client.cancel(stats)


def _failure(exc: BaseException) -> str:
    text = f"the Dask cluster failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, ImportError) and "torchscope" in str(exc):
        text += " (the workers must be able to import torchscope: install it where they run)"
    return text


# -- connecting -----------------------------------------------------------------------------------


def _address_in(scheduler_file: str) -> str:
    """The address a ``dask scheduler --scheduler-file`` wrote."""
    try:
        data: Any = json.loads(Path(scheduler_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ClusterError(f"cannot read the Dask scheduler file {scheduler_file}: {exc}") from None
    address = data.get("address") if isinstance(data, dict) else None
    if not isinstance(address, str) or not address:
        raise ClusterError(
            f'{scheduler_file} is not a Dask scheduler file (it has no "address"): '
            "write it with `dask scheduler --scheduler-file PATH`"
        )
    return address


def connect(address: str | None = None, scheduler_file: str | None = None) -> Client:
    """A client of the scheduler at ``address``, or of the one ``scheduler_file`` names.
    Raises :class:`ClusterError` when Dask is not installed or the scheduler is not reachable
    (within Dask's ``distributed.comm.timeouts.connect``, 30 s unless configured)."""
    try:
        from distributed import Client
        from distributed.comm.addressing import get_address_host_port
    except ImportError as exc:
        raise ClusterError(
            f"analysing on a Dask cluster needs Dask's distributed package ({exc}): {INSTALL}"
        ) from None
    if scheduler_file is not None:
        address = _address_in(scheduler_file)
    if not address:
        raise ClusterError("no Dask scheduler named: give --scheduler or --scheduler-file")
    try:
        get_address_host_port(address)  # Client itself fails on a bad one only after a delay
    except ValueError as exc:
        raise ClusterError(
            f"{address!r} is not a Dask scheduler address ({exc}): write tcp://HOST:PORT"
        ) from None
    try:
        return Client(address, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
