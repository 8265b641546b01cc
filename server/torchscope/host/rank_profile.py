"""``profile --nproc N``: run the ranks (``rank_run``), then the cross-rank analysis.

The outcome is the slowest rank's ``ProfileOutcome`` (its report, its lines) with the
cross-rank view beside it; ``to_builtins`` of it merges the two as ``analyze DIR --json`` does.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from torchscope.analysis import RankColumns, RanksReport, TraceError, analyze_ranks
from torchscope.host.profile_run import (
    ProfileFailure,
    ProfileOutcome,
    choose_call,
)
from torchscope.host.rank_run import run_ranks
from torchscope.host.trace_store import RANKS_SUFFIX, TRACE_SUFFIX, TraceStore
from torchscope.protocol import JobOptions, ProfileRequest, json_as
from torchscope.source.targets import Target

_JOB_IDS = itertools.count(1)


@dataclass
class RanksOutcome:
    """The slowest rank's outcome and the cross-rank view. ``to_builtins`` of it is the
    ``profile --nproc N --json`` object: the slowest rank's profile object with its report
    merged with the cross-rank view (``RanksReport.merged``), the per-rank columns and
    ``trace_dir`` (the folder of all traces)."""

    outcome: ProfileOutcome = field(metadata=json_as(skip=True))
    view: RanksReport = field(metadata=json_as(skip=True))
    trace_dir: Path = field(metadata=json_as())
    shown: ProfileOutcome = field(init=False, metadata=json_as(flatten=True))
    columns: RankColumns = field(init=False, metadata=json_as(flatten=True))

    def __post_init__(self) -> None:
        self.shown = replace(self.outcome, report=self.view.merged(self.outcome.report))
        self.columns = self.view.columns


async def profile_ranks(
    python: str,
    store: TraceStore,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    cuda_available: bool,
    cwd: Optional[str] = None,
    on_output: Callable[[str], None] = lambda line: None,
) -> RanksOutcome:
    """Profile ``target`` on ``options.nproc`` ranks and analyse every rank (in a process
    pool). Raises :class:`ProfileFailure` (a ``RankFailure`` naming the failing rank)."""
    backend = resolve_backend(options, cuda_available)
    nproc = max(1, options.nproc)
    chosen = choose_call(target, call, backend == "nccl")
    first = store.new_path(target.file, target.qualname)  # past the retention: removed
    trace_dir = first.with_name(first.name[: -len(TRACE_SUFFIX)] + RANKS_SUFFIX)
    store.own(trace_dir)
    request = ProfileRequest(
        job_id=next(_JOB_IDS),
        file=str(Path(target.file).resolve()),
        qualname=target.qualname,
        call=chosen,
        trace_path=str(trace_dir / "rank0.json.gz"),  # each rank writes rank<R>.json.gz
        options=options.updated({"device": "cuda" if backend == "nccl" else "cpu"}),
    )
    ranks = await run_ranks(
        python, request, nproc, backend, trace_dir, options.timeout_s, cwd, on_output
    )
    paths = [r.trace_path for r in ranks.results]
    loop = asyncio.get_running_loop()
    try:
        view = await loop.run_in_executor(
            None, analyze_ranks, paths, None, [r.measured for r in ranks.results]
        )
    except TraceError as exc:
        raise ProfileFailure("analysis", str(exc), target.def_line) from exc
    slow = view.slowest
    path = next(r.trace_path for r in view.ranks if r.rank == slow)
    result = next(r for r in ranks.results if r.trace_path == path)
    outcome = ProfileOutcome(target, chosen, result, view.reports[slow])
    return RanksOutcome(outcome, view, trace_dir)


def resolve_backend(options: JobOptions, cuda_available: bool) -> str:
    """``--backend``, or for ``auto``: nccl where the job uses CUDA, else gloo."""
    if options.backend != "auto":
        return options.backend
    uses_cuda = options.device == "cuda" or (options.device == "auto" and cuda_available)
    return "nccl" if uses_cuda else "gloo"
