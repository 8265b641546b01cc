"""Who contains whom on each CPU thread: one sort and one stack sweep per thread.

The profiler records nesting only implicitly, as time containment on a thread. One sweep over
the thread's ops, annotations, Python frames and runtime calls, sorted by (start, longest
first), yields for every event its nearest enclosing op, annotation and Python frame. That is
all later stages need: which ops are top-level (the dispatch count of the CPU verdict), each
op's self time, which ``torchscope:L<n>`` marker or ``DataLoader`` annotation a call sits in,
and which op issued each runtime call. Annotations are transparent for op nesting: an op under
``ProfilerStep#3`` and ``torchscope:L12`` is still top-level.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress, repeat
from operator import itemgetter, neg, sub
from typing import Union

from ...ingest import Span, Trace, accel

NEST_TOLERANCE_US = 1.0
"""Legacy traces round ``ts`` and ``dur`` to whole µs, so a child can stick out of its parent
by up to a microsecond; such a child is still a child."""

_ANN, _PY, _OP, _RT = 0, 1, 2, 3  # sort rank at equal (start, end): outermost first
_START, _END, _TRACK = itemgetter(0), itemgetter(1), itemgetter(3)


Links = array  # of int32 ("i"): 4 bytes a link, where a list held 8 and often an int's 32
"""One link per span of a kind, an index into another kind's list."""


Wanted = Union[bytes, bytearray]  # not ``|``: Python 3.9 evaluates this line
"""A byte per runtime call: nonzero where the call is wanted."""


def _none(n: int) -> Links[int]:
    """``n`` links, all -1."""
    return array("i", [-1]) * n


@dataclass
class Nesting:
    """Parent links, as indices into the trace's per-kind lists; -1 means none."""

    op_parent: Links[int]
    """Nearest enclosing op of each op (annotations skipped): -1 marks a top-level op."""
    op_self: list[float]
    """Each op's duration minus that of the ops directly under it."""
    op_ann: Links[int]
    op_py: Links[int]
    rt_op: Links[int]
    rt_ann: Links[int]
    rt_py: Links[int]
    ann_parent: Links[int]
    ann_op: Links[int]
    ann_py: Links[int]
    py_parent: Links[int]

    def annotation_chain(self, ann: int) -> list[int]:
        """``ann`` and the annotations enclosing it, innermost first."""
        chain: list[int] = []
        parent = self.ann_parent
        while ann >= 0 and len(chain) < 256:
            chain.append(ann)
            ann = parent[ann]
        return chain


def _sweep_items(trace: Trace, wanted: Wanted | None) -> list[tuple[int, float, float, int, int]]:
    """One list of (thread, start, -end, rank, index) for all four kinds, built with zip in
    C and sorted once: per thread, by start, longest first, annotations outside ops."""
    rts = trace.runtime
    items: list[tuple[int, float, float, int, int]] = []
    for rank, spans in (
        (_ANN, trace.annotations),
        (_PY, trace.python),
        (_OP, trace.ops),
        (_RT, rts),
    ):
        n = len(spans)
        index: Iterable[int] = range(n)
        if rank == _RT and wanted is not None:
            index = list(compress(range(n), wanted))
            spans = list(map(rts.__getitem__, index))
            n = len(spans)
        items.extend(
            zip(
                map(_TRACK, spans),
                map(_START, spans),
                map(neg, map(_END, spans)),
                repeat(rank, n),
                index,
            )
        )
    items.sort()
    return items


def _unlinked(trace: Trace) -> Nesting:
    """A :class:`Nesting` with every link -1 and every op's self time its duration."""
    ops, anns, pys, rts = trace.ops, trace.annotations, trace.python, trace.runtime
    n_ops = len(ops)
    nest = Nesting(
        op_parent=_none(n_ops),
        op_self=list(map(sub, map(_END, ops), map(_START, ops))),
        op_ann=_none(n_ops),
        op_py=_none(n_ops),
        rt_op=_none(len(rts)),
        rt_ann=_none(len(rts)),
        rt_py=_none(len(rts)),
        ann_parent=_none(len(anns)),
        ann_op=_none(len(anns)),
        ann_py=_none(len(anns)),
        py_parent=_none(len(pys)),
    )
    return nest


def build_nesting(trace: Trace, wanted: Wanted | None = None) -> Nesting:
    """Sweep every CPU thread once; see the module docstring.

    ``wanted``: a byte per runtime call, nonzero for those whose enclosing op, marker and
    frame matter (launches, copies, syncs); the others (``cudaEventQuery`` polls, capture
    checks) keep -1. A third of a big trace's runtime calls are such polls, so skipping them
    shortens the sort and the sweep. ``None``: all of them.

    The sweep runs in C where the extension is built (``_native_nest.c``, the same items,
    order and arithmetic); :func:`_sweep` is its Python twin."""
    nest = _unlinked(trace)
    native = accel.native
    if native is not None and native.nest(
        trace.annotations,
        trace.python,
        trace.ops,
        trace.runtime,
        wanted,
        (
            nest.op_parent,
            nest.op_self,
            nest.op_ann,
            nest.op_py,
            nest.rt_op,
            nest.rt_ann,
            nest.rt_py,
            nest.ann_parent,
            nest.ann_op,
            nest.ann_py,
            nest.py_parent,
        ),
        NEST_TOLERANCE_US,
    ):
        return nest
    _sweep(trace, nest, wanted)
    return nest


def _sweep(trace: Trace, nest: Nesting, wanted: Wanted | None) -> None:
    """Fill ``nest``'s links and self times by one stack sweep per thread.

    Over 60 lines on purpose: the sweep runs once per CPU event, with every list and the
    stack top in local variables; a helper call per event would cost a third more."""
    items = _sweep_items(trace, wanted)

    op_parent, op_self, op_ann, op_py = nest.op_parent, nest.op_self, nest.op_ann, nest.op_py
    rt_op, rt_ann, rt_py = nest.rt_op, nest.rt_ann, nest.rt_py
    ann_parent, ann_op, ann_py, py_parent = (
        nest.ann_parent,
        nest.ann_op,
        nest.ann_py,
        nest.py_parent,
    )
    tol = NEST_TOLERANCE_US
    bottom: tuple[float, int, int, int] = (float("inf"), -1, -1, -1)
    # Stack entries: (end, nearest op, nearest annotation, nearest python frame), each
    # "nearest" including the entry itself.
    stack: list[tuple[float, int, int, int]] = []
    top = bottom
    thread = None
    for track, start, neg_end, rank, i in items:
        if track != thread:
            thread = track
            stack = []
            top = bottom
        end = -neg_end
        while stack and (top[0] <= start or end > top[0] + tol):
            stack.pop()
            top = stack[-1] if stack else bottom
        _, p_op, p_ann, p_py = top
        if rank == _OP:
            op_parent[i] = p_op
            op_ann[i] = p_ann
            op_py[i] = p_py
            if p_op >= 0:
                op_self[p_op] -= end - start
            top = (end, i, p_ann, p_py)
            stack.append(top)
        elif rank == _RT:
            rt_op[i] = p_op
            rt_ann[i] = p_ann
            rt_py[i] = p_py
        elif rank == _ANN:
            ann_parent[i] = p_ann
            ann_op[i] = p_op
            ann_py[i] = p_py
            top = (end, p_op, i, p_py)
            stack.append(top)
        else:
            py_parent[i] = p_py
            top = (end, p_op, p_ann, i)
            stack.append(top)


def top_level_ops(trace: Trace, nest: Nesting) -> list[Span]:
    """Ops not inside another op on their thread: what the user's code dispatched."""
    parent = nest.op_parent
    return [s for i, s in enumerate(trace.ops) if parent[i] < 0]
