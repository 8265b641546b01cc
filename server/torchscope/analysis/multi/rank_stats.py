"""One rank's side of the cross-rank view: analyse its trace and measure its steps.

Runs in a pool process (``ranks.analyze_ranks``), so everything it returns is small and
picklable: the rank's :class:`Report`, per-step numbers, and its collectives for alignment.
"""

from __future__ import annotations

import gc
import re
from bisect import bisect_right
from collections import Counter
from operator import attrgetter
from pathlib import Path
from typing import Any

from ...ingest import Span, Trace, load_trace
from ..engine import analyze
from ..index.columns import is_comm_kernel
from ..index.intervals import Timeline
from ..index.segment import Step, find_steps
from ..results import Measurements
from .rank_model import RankStats

#: Prefixes of the CPU-side ranges the process-group backends record per collective
#: (``gloo:all_reduce`` on gloo's worker thread, ``nccl:all_reduce`` where NCCL is enqueued).
BACKEND_PREFIXES = ("gloo:", "nccl:", "mpi:", "ucc:", "xccl:")

#: Ops that stand for a collective on the CPU (its enqueue or its wait), not for compute.
_CPU_COMM_OPS = ("c10d::", "record_param_comms", "ProcessGroup", "c10d:")

_START = attrgetter("start")
_FILE_RANK = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
_SEQ_KEYS = ("Seq", "seq", "Sequence number")


def is_backend_collective(name: str) -> bool:
    """A CPU-side collective range of a process-group backend (``gloo:all_reduce``)."""
    return name.startswith(BACKEND_PREFIXES)


def _is_cpu_comm_op(name: str) -> bool:
    return name.startswith(_CPU_COMM_OPS) or is_backend_collective(name)


def rank_of(trace: Trace, path: str) -> tuple[int | None, str]:
    """The trace's rank: ``distributedInfo.rank``, else ``rank<N>`` in the file name."""
    info = trace.meta.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return int(info["rank"]), "trace"
    m = _FILE_RANK.search(Path(path).name)
    if m:
        return int(m.group(1)), "file"
    return None, "order"


def collectives_of(trace: Trace) -> list[Span]:
    """The spans that are collective communication, sorted by start: NCCL/RCCL kernels when
    the trace has any, else the backends' CPU-side collective ranges (a CPU run with gloo)."""
    comm = [k for k in trace.kernels if is_comm_kernel(k.name)]
    if comm:
        return comm
    cpu = [s for s in trace.annotations + trace.ops if is_backend_collective(s.name)]
    cpu.sort(key=_START)
    return cpu


def _compute_of(trace: Trace, on_device: bool) -> Timeline:
    """The union of the work that is not communication: kernels on a GPU trace, else ops."""
    if on_device:
        return Timeline((k.start, k.end) for k in trace.kernels if not is_comm_kernel(k.name))
    return Timeline((o.start, o.end) for o in trace.ops if not _is_cpu_comm_op(o.name))


def _overlap(comm: Timeline, compute: Timeline, a: float, b: float) -> float:
    """Time inside ``[a, b]`` where both timelines are busy."""
    total = 0.0
    for s, e in zip(comm.starts, comm.ends):
        if e <= a or s >= b:
            continue
        total += compute.busy(max(s, a), min(e, b))
    return total


def _step_index(steps: list[Step], starts: list[float], t: float) -> int:
    """The step holding time ``t`` (-1: outside every step)."""
    i = bisect_right(starts, t) - 1
    return i if i >= 0 and t <= steps[i].end else -1


def _seq(span: Span) -> Any:
    """``(process group, sequence number)`` from the collective's args (Kineto's ``Seq`` and
    ``Process Group Name``: sequence numbers count per process group), else None."""
    for key in _SEQ_KEYS:
        value = span.args.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return (str(span.args.get("Process Group Name", "")), value)
    return None


def _keys(spans: list[Span]) -> tuple[list[object], bool]:
    """Alignment keys: sequence numbers when every collective has one, else
    ``(name, n-th collective of that name)``."""
    seqs = [_seq(s) for s in spans]
    if spans and all(q is not None for q in seqs):
        return list(seqs), True
    seen: Counter[str] = Counter()
    keys: list[object] = []
    for s in spans:
        keys.append((s.name, seen[s.name]))
        seen[s.name] += 1
    return keys, False


def measure_rank(
    trace: Trace, rank: int, path: str, measurements: Measurements | None = None
) -> RankStats:
    """Analyse one rank's trace and measure its steps (see ``rank_model`` for the meanings)."""
    report = analyze(trace, measurements)
    coll = collectives_of(trace)
    comm = Timeline.from_sorted((s.start, s.end) for s in coll)
    compute = _compute_of(trace, on_device=bool(trace.kernels))
    stats = RankStats(rank=rank, path=path, report=report)
    steps = find_steps(trace)
    for step in steps:
        c = comm.busy(step.start, step.end)
        stats.wall.append(step.wall_us)
        stats.comm.append(c)
        stats.compute.append(compute.busy(step.start, step.end))
        hidden = min(c, _overlap(comm, compute, step.start, step.end))
        stats.exposed.append(max(0.0, c - hidden))
        stats.hidden.append(hidden)
    keys, stats.sequenced = _keys(coll)
    starts = [s.start for s in steps]
    stats.collectives = [
        (key, _step_index(steps, starts, s.start), s.end - s.start) for key, s in zip(keys, coll)
    ]
    return stats


def measure_rank_file(
    path: str, fallback_rank: int, measurements: Measurements | None = None
) -> RankStats:
    """Load and measure one trace file (the pool's task; the collector paused as in
    ``analyze_trace``)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        trace = load_trace(path)
        rank, source = rank_of(trace, path)
        stats = measure_rank(trace, fallback_rank if rank is None else rank, path, measurements)
        stats.rank_source = source
        return stats
    finally:
        if enabled:
            gc.enable()
