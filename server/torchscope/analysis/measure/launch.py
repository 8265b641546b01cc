"""Device work by the step that launched it (issue 29, item 1).

A kernel, memcpy or memset belongs to the step whose runtime call launched it (Kineto's
``correlation`` id, see :mod:`.link`), wherever on the device timeline it ran: without a sync
per step the CPU runs ahead, and a step's last kernels run after its CPU side has ended
(``hta_resnet_v100_ns_units``' last step ran 19 % of its kernel time there). A device span
with no launch call but an ``External id`` goes by the op that names it; one with neither goes
by where it ran. Spans on other devices than the primary one belong to no step.

The step's *span* runs from its CPU start to the later of its CPU end and the end of the last
device activity it launched, except that it starts no earlier than the previous step's span
ended: spans tile the run, so their sum is the run's length. Without that, a device running a
step behind (no sync per step) would give each step a span of two steps
(``hta_resnet_v100_ns_units``: the device is busy 99 % of the time, and spans from the CPU
start would say 51 %). The busy share is the union of the step's launched device work over
its span (at most 1: on several streams a step's work can run under the previous span, as in
``hta_recsys_a100_rank0``). CPU numbers (ops, runtime calls, DataLoader waits, gaps) keep the
CPU window.

A step's spans of one kind are runs of consecutive spans with the same launch step (a handful
per step: the CPU launches in order), so per-step work runs over slices.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, groupby, repeat
from operator import itemgetter, lt, methodcaller, not_

from ...ingest import Span
from ..index.columns import ByName, all_linked, is_comm_kernel, name_ids
from ..index.context import Context, assign
from ..index.intervals import union_length
from ..index.link import copy_kind

_START = itemgetter(0)
_END = itemgetter(1)
_NAME = itemgetter(2)
_TRACK = itemgetter(3)
_ARGS = itemgetter(4)
_INTERVAL = itemgetter(0, 1)
_GET_BYTES = methodcaller("get", "bytes", 0)

Runs = list[list[tuple[int, int]]]
"""Per step, the ``[lo, hi)`` slices of one span list that the step launched."""


def _launch_step(ctx: Context, spans: list[Span], kind: str) -> array[int]:
    """Per span of one device list, the step that launched it (-1: none)."""
    links = ctx.links
    rts, issued, fallback = {
        "kernel": (links.kernel_rt, links.kernel_issued, ctx.step_of_kernel),
        "memcpy": (links.memcpy_rt, links.memcpy_issued, ctx.step_of_memcpy),
        "memset": (links.memset_rt, links.memset_issued, ctx.step_of_memset),
    }[kind]
    primary = ctx.primary_device
    if not spans or primary is None:
        return array("i", [-1]) * len(spans)
    step_of_rt = ctx.step_of_rt + array("i", [-1])  # index -1 (not linked) reads the sentinel
    out = array("i", map(step_of_rt.__getitem__, rts))
    if not all_linked(ctx, rts):
        unlinked = list(compress(range(len(rts)), map(lt, rts, repeat(0))))
        by_op = [i for i in unlinked if issued[i] == issued[i]]  # linked by External id
        for i, k in zip(by_op, assign(ctx.steps, [issued[i] for i in by_op])):
            out[i] = k
        for i in unlinked:
            if issued[i] != issued[i]:  # not linked at all: go by where it ran
                out[i] = fallback[i]
    on_primary = {i for i, t in enumerate(ctx.trace.tracks) if primary == t.device}
    if not on_primary.issuperset(map(_TRACK, spans)):  # other devices: in no step
        elsewhere = map(not_, map(on_primary.__contains__, map(_TRACK, spans)))
        for i in compress(range(len(spans)), elsewhere):
            out[i] = -1
    return out


def launch_steps(ctx: Context, spans: list[Span], kind: str) -> array[int]:
    """Per span of ``spans`` (``kind``: ``kernel``/``memcpy``/``memset``), the step that
    launched it (-1: none), as int32; computed once per list."""
    return ctx.memo((id(spans), "launch.steps"), lambda: _launch_step(ctx, spans, kind))


def launch_runs(ctx: Context, spans: list[Span], kind: str) -> Runs:
    """Per step, the slices of ``spans`` (``kind``: ``kernel``/``memcpy``/``memset``) that
    its calls launched; computed once per list."""
    return ctx.memo((id(spans), "launch.runs"), lambda: _launch_runs(ctx, spans, kind))


def _launch_runs(ctx: Context, spans: list[Span], kind: str) -> Runs:
    found: Runs = [[] for _ in ctx.steps]
    lo = 0
    for k, run in groupby(launch_steps(ctx, spans, kind)):
        hi = lo + len(list(run))
        if k >= 0:
            found[k].append((lo, hi))
        lo = hi
    return found


def _sum(values: Sequence[float], runs: list[tuple[int, int]]) -> float:
    return float(sum(sum(values[lo:hi]) for lo, hi in runs)) if runs else 0.0


@dataclass(frozen=True)
class LaunchedWork:
    """Per step, the device work its calls launched (µs; ``end`` is absolute, ``-inf``
    when the step launched nothing)."""

    union_us: list[float]
    first: list[float]
    end: list[float]
    kernel_us: list[float]
    comm_us: list[float]
    memcpy_us: list[float]
    memset_us: list[float]
    copies: list[int]
    copy_bytes: list[dict[str, int]]


def _copy_bytes(memcpys: list[Span], runs: list[tuple[int, int]]) -> dict[str, int]:
    """Bytes copied by direction (``HtoD``…), in first-seen order; a ``bytes`` that is not an
    integer counts 0."""
    kind_of = ByName(copy_kind)
    chunk = [m for lo, hi in runs for m in memcpys[lo:hi]]
    kinds = list(map(kind_of.__getitem__, map(_NAME, chunk)))
    sizes = list(map(_GET_BYTES, map(_ARGS, chunk)))
    if not {int}.issuperset(map(type, sizes)):  # a float, bool, …: look at each
        sizes = [b if isinstance(b, int) and not isinstance(b, bool) else 0 for b in sizes]
    return {k: sum(compress(sizes, map(k.__eq__, kinds))) for k in dict.fromkeys(kinds)}


def _union_and_end(
    ctx: Context, per_kind: list[tuple[list[Span], Runs]]
) -> tuple[list[float], list[float], list[float]]:
    """Per step, the union of its launched device intervals, the start of the first one and
    the end of the last one."""
    unions: list[float] = []
    firsts: list[float] = []
    ends: list[float] = []
    for k in range(len(ctx.steps)):
        members: list[Span] = []
        kinds = 0
        for spans, runs in per_kind:
            if runs[k]:
                kinds += 1
                for lo, hi in runs[k]:
                    members += spans[lo:hi]
        if kinds > 1:  # each list is sorted by start: one kind needs no sort
            members.sort(key=_START)
        unions.append(union_length(map(_INTERVAL, members)))
        firsts.append(members[0][0] if members else float("inf"))
        ends.append(max(map(_END, members), default=float("-inf")))
    return unions, firsts, ends


def launched_work(ctx: Context) -> LaunchedWork:
    """Per step, the device work its own calls launched, wherever it ran."""
    trace = ctx.trace
    kernels, memcpys, memsets = trace.kernels, trace.memcpys, trace.memsets
    k_runs = launch_runs(ctx, kernels, "kernel")
    m_runs = launch_runs(ctx, memcpys, "memcpy")
    s_runs = launch_runs(ctx, memsets, "memset")
    k_dur = ctx.durations(kernels)
    ids, names = name_ids(ctx, kernels)
    comm_ids = list(map(is_comm_kernel, names))
    comm_dur = list(compress(k_dur, map(comm_ids.__getitem__, ids))) if any(comm_ids) else []
    is_comm = list(map(comm_ids.__getitem__, ids)) if comm_dur else []
    unions, firsts, ends = _union_and_end(
        ctx, [(kernels, k_runs), (memcpys, m_runs), (memsets, s_runs)]
    )
    m_dur, s_dur = ctx.durations(memcpys), ctx.durations(memsets)
    return LaunchedWork(
        union_us=unions,
        first=firsts,
        end=ends,
        kernel_us=[_sum(k_dur, r) for r in k_runs],
        comm_us=[
            float(sum(sum(compress(k_dur[lo:hi], is_comm[lo:hi])) for lo, hi in r))
            if comm_dur
            else 0.0
            for r in k_runs
        ],
        memcpy_us=[_sum(m_dur, r) for r in m_runs],
        memset_us=[_sum(s_dur, r) for r in s_runs],
        copies=[sum(hi - lo for lo, hi in r) for r in m_runs],
        copy_bytes=[_copy_bytes(memcpys, r) for r in m_runs],
    )


def step_spans(ctx: Context, work: LaunchedWork) -> list[tuple[float, float]]:
    """Per step, its span (see the module docstring): ``end`` is the later of the CPU end and
    the last launched device end; ``start`` the CPU start, or the previous span's end when
    that is later."""
    out: list[tuple[float, float]] = []
    previous = float("-inf")
    for st, last in zip(ctx.steps, work.end):
        start = max(st.start, previous)
        end = max(st.end, last, start)
        out.append((start, end))
        previous = end
    return out
