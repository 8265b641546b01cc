"""What one trace's steps ran, per call of the function: ops, copies, compiled graphs.

The comparison (:mod:`.compare`) reads two of these, one per side. Per-call numbers are medians
over the steps (one odd step — a recompile, a load spike — must not move them).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ...ingest import Trace
from ..index.columns import median
from ..index.context import Context, build_context
from ..index.link import copy_kind
from ..measure.launch import launch_steps
from .comparison import CopyRow, OpRow

ATEN_PREFIXES = ("aten::", "prims::", "inductor::", "quantized::")
"""Ops that do the work (as opposed to compile-machinery annotations and wrappers)."""

COPY_OPS = frozenset({"aten::copy_"})
"""The op that moves the bytes; ``clone``/``_to_copy``/``contiguous`` reach it underneath."""

COPY_WRAPPERS = frozenset(
    {"aten::copy_", "aten::clone", "aten::_to_copy", "aten::to", "aten::contiguous"}
)
"""Skipped when naming the op a copy happens *in*: the reason is the op above them."""

DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
}
"""``Input type`` strings as Kineto writes them → bytes per element."""

_GRAPH = re.compile(r"CompiledFxGraph (?!None\b)(\w+)")
"""``None``: a graph compiled with the FX graph cache off (the profiled pass with provenance,
``worker/kernel_provenance.py``); the timed graphs' keys (``graph_code``) stand for it."""
_REGION = re.compile(r"Torch-Compiled Region: (\d+/\d+)")


@dataclass
class Inventory:
    """What one trace's steps ran, per call: ops, copies, compiled graphs."""

    steps: int
    ops: list[OpRow] = field(default_factory=list)
    copies: list[CopyRow] = field(default_factory=list)
    graphs: list[str] = field(default_factory=list)
    """``CompiledFxGraph`` cache keys called in the steps."""
    compile_ids: list[str] = field(default_factory=list)
    """``Torch-Compiled Region: F/C`` ids: C > 0 means frame F was recompiled."""

    def counts(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for row in self.ops:
            out[row.name] = out.get(row.name, 0.0) + row.calls
        return out


def _is_work(name: str) -> bool:
    return name.startswith(ATEN_PREFIXES)


def _tensor_bytes(args: Any, index: int) -> float:
    """Bytes of input ``index`` from ``Input Dims`` × ``Input type`` (0 when unknown)."""
    dims = args.get("Input Dims") if hasattr(args, "get") else None
    types = args.get("Input type") if hasattr(args, "get") else None
    if not isinstance(dims, list) or not isinstance(types, list) or len(dims) <= index:
        return 0.0
    shape, dtype = dims[index], types[index] if len(types) > index else None
    size = DTYPE_BYTES.get(dtype) if isinstance(dtype, str) else None
    if not isinstance(shape, list) or size is None:
        return 0.0
    return float(math.prod(int(d) for d in shape if isinstance(d, (int, float))) * size)


class _PerStep:
    """Per key, per step sums of a few numbers; read back as medians over the steps (one odd
    step — a recompile, a load spike — must not move a per-call number)."""

    def __init__(self, steps: int, width: int) -> None:
        self.steps = max(1, steps)
        self.width = width
        self.sums: dict[Any, list[list[float]]] = {}

    def add(self, key: Any, step: int, *values: float) -> None:
        rows = self.sums.get(key)
        if rows is None:
            rows = self.sums[key] = [[0.0] * self.width for _ in range(self.steps)]
        row = rows[min(max(step, 0), self.steps - 1)]
        for k, v in enumerate(values):
            row[k] += v

    def medians(self, key: Any) -> list[float]:
        rows = self.sums[key]
        return [median([r[k] for r in rows]) for k in range(self.width)]


Within = Callable[[int, frozenset[str]], Optional[str]]
"""Op index, names to skip → the nearest enclosing op that does work."""


def _within(ctx: Context) -> Within:
    ops, parent = ctx.trace.ops, ctx.nest.op_parent

    def within(i: int, skip: frozenset[str] = frozenset()) -> Optional[str]:
        p = parent[i]
        while p >= 0 and (not _is_work(ops[p].name) or ops[p].name in skip):
            p = parent[p]
        return ops[p].name if p >= 0 else None

    return within


def _graphs(ctx: Context) -> tuple[list[str], list[str]]:
    """``CompiledFxGraph`` keys called in the steps (ops first, then annotations, each in
    order of first call) and the sorted ``Torch-Compiled Region`` ids."""
    trace = ctx.trace
    compile_ids: set[str] = set()
    graphs: list[str] = []
    for i, op in enumerate(trace.ops):
        if ctx.step_of_op[i] < 0 or _is_work(op.name):
            continue
        region = _REGION.search(op.name)
        if region:
            compile_ids.add(region.group(1))
        graph = _GRAPH.search(op.name)
        if graph and graph.group(1) not in graphs:
            graphs.append(graph.group(1))
    for k, ann in enumerate(trace.annotations):
        graph = _GRAPH.search(ann.name)
        if graph and ctx.step_of_ann[k] >= 0 and graph.group(1) not in graphs:
            graphs.append(graph.group(1))
    return graphs, sorted(compile_ids)


def _ops_and_host_copies(ctx: Context, within: Within) -> tuple[list[OpRow], list[CopyRow]]:
    trace = ctx.trace
    n = len(ctx.steps)
    op_sums = _PerStep(n, 2)
    parents: dict[str, dict[Optional[str], int]] = {}
    host_copies = _PerStep(n, 3)
    for i, op in enumerate(trace.ops):
        step = ctx.step_of_op[i]
        name = op.name
        if step < 0 or not _is_work(name):
            continue
        op_sums.add(name, step, 1.0, ctx.nest.op_self[i])
        host = within(i, frozenset())
        parents.setdefault(name, {})
        parents[name][host] = parents[name].get(host, 0) + 1
        if name in COPY_OPS and not trace.has_device_activity:
            key = (name, within(i, COPY_WRAPPERS))
            host_copies.add(key, step, 1.0, _tensor_bytes(op.args, 0), ctx.nest.op_self[i])
    rows = []
    for name in op_sums.sums:  # in order of first call
        calls, self_us = op_sums.medians(name)
        where = max(parents[name], key=lambda p: parents[name][p])
        rows.append(OpRow(name=name, calls=calls, self_cpu_us=self_us, within=where))
    copies = []
    for name, where in host_copies.sums:
        count, nbytes, us = host_copies.medians((name, where))
        copies.append(CopyRow("cpu", name, where, count, nbytes, us))
    return rows, copies


def inventory(trace: Trace) -> Inventory:
    """Ops, copies and compiled graphs of the trace's steps, per call (medians over steps).

    Copies are the device memcpys (kind and bytes from the events) when the trace has device
    activity, else the host ``aten::copy_`` ops (bytes from ``record_shapes``' dims × dtype);
    either way each names the op it happened in (``aten::addmm`` for the bias copy).
    """
    ctx = build_context(trace, None)
    within = _within(ctx)
    rows, copies = _ops_and_host_copies(ctx, within)
    graphs, compile_ids = _graphs(ctx)
    return Inventory(
        steps=len(ctx.steps),
        ops=rows,
        copies=copies + _device_copies(ctx, within),
        graphs=graphs,
        compile_ids=compile_ids,
    )


def _device_copies(ctx: Context, within: Within) -> list[CopyRow]:
    trace = ctx.trace
    groups = _PerStep(len(ctx.steps), 3)
    # By the step that launched each copy: without a sync per step (a compiled GEMM at 4096
    # on an H200) the device runs steps behind the CPU and no copy starts inside its step.
    launched = launch_steps(ctx, trace.memcpys, "memcpy")
    for m, copy in enumerate(trace.memcpys):
        step = launched[m]
        if step < 0:
            continue
        r = ctx.links.memcpy_rt[m]
        op = ctx.nest.rt_op[r] if r >= 0 else -1
        name = trace.ops[op].name if op >= 0 else (trace.runtime[r].name if r >= 0 else "?")
        where = None
        if op >= 0:
            where = name if name not in COPY_WRAPPERS else within(op, COPY_WRAPPERS)
        nbytes = copy.args.get("bytes")
        size = float(nbytes) if isinstance(nbytes, (int, float)) else 0.0
        groups.add((copy_kind(copy.name), name, where), step, 1.0, size, copy.end - copy.start)
    out = []
    for key in groups.sums:
        count, nbytes, us = groups.medians(key)
        out.append(CopyRow(key[0], key[1], key[2], count, nbytes, us))
    return out
