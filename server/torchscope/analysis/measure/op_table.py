"""The op table and the kernel table: names aggregated over the analysed steps, per step."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import compress, repeat
from operator import and_, itemgetter, le

from ..index.columns import Ids, column, median, name_ids
from ..index.context import Context
from ..results import KernelStat, TopOp
from .launch import launch_runs

_NAME = itemgetter(2)

TOP_KERNELS = 10
"""Rows in the kernel table."""


def kernel_table(ctx: Context) -> dict[str, list[float]]:
    """Kernel name → its device time in each step, by the step that launched it (built once;
    the kernel table and kernel-variance read it)."""
    return _kernel_rows(ctx)[0]


def kernel_calls(ctx: Context) -> dict[str, list[int]]:
    """Kernel name → how many of it each step launched (the rows of :func:`kernel_table`)."""
    return _kernel_rows(ctx)[1]


def _kernel_rows(ctx: Context) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    """Kernel name → its device time and its launches, per step (built once)."""
    return ctx.memo((id(ctx.trace.kernels), "kernel_table"), lambda: _count_kernels(ctx))


def _count_kernels(ctx: Context) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    kernels = ctx.trace.kernels
    n = len(ctx.steps)
    time: dict[str, list[float]] = {}
    calls: dict[str, list[int]] = {}
    durations = ctx.durations(kernels)
    for k, runs in enumerate(launch_runs(ctx, kernels, "kernel")):
        for lo, hi in runs:
            for name, dur in zip(map(_NAME, kernels[lo:hi]), durations[lo:hi]):
                row = time.get(name)
                if row is None:
                    row = time[name] = [0.0] * n
                    calls[name] = [0] * n
                row[k] += dur
                calls[name][k] += 1
    return time, calls


def top_kernels(ctx: Context, limit: int = TOP_KERNELS) -> list[KernelStat]:
    """Kernels by median device time per step (by the step that launched them), with min /
    median / max across steps."""
    n = len(ctx.steps)
    kernels = ctx.trace.kernels
    if n == 0 or not kernels:
        return []
    per = kernel_table(ctx)
    medians = {name: median(row) for name, row in per.items()}
    ranked = sorted(per, key=lambda k: -medians[k])[:limit]
    row_of = {name: j for j, name in enumerate(ranked)}
    ids, names = name_ids(ctx, kernels)
    row_of_id = [row_of.get(name, -1) for name in names]  # -1: not in the table
    count = [0] * len(ranked)
    delays: list[list[float]] = [[] for _ in ranked]
    k_starts, r_starts = ctx.starts(kernels), ctx.starts(ctx.trace.runtime)
    rts = ctx.links.kernel_rt
    # Launch delays of every kernel each step launched, when the step numbers found them.
    per_step: list[array[float]] | None = column(ctx, kernels, "metrics.delays")
    for k, runs in enumerate(launch_runs(ctx, kernels, "kernel")):
        members = [i for lo, hi in runs for i in range(lo, hi)]
        rows = list(map(row_of_id.__getitem__, map(ids.__getitem__, members)))
        in_table = list(map(le, repeat(0), rows))
        if per_step is not None:
            for row, value in compress(zip(rows, per_step[k]), in_table):
                count[row] += 1
                delays[row].append(value)
            continue
        for i, row in compress(zip(members, rows), in_table):
            count[row] += 1
            r = rts[i]
            if r >= 0:
                delays[row].append(k_starts[i] - r_starts[r])
    return [
        KernelStat(
            name=name,
            calls=count[j],
            median_us=medians[name],
            min_us=float(min(per[name])),
            max_us=float(max(per[name])),
            launch_delay_us=median(delays[j]) if delays[j] else None,
        )
        for j, name in enumerate(ranked)
    ]


TOP_OPS = 10
"""Rows in the op table."""


def op_table(ctx: Context, limit: int = TOP_OPS) -> tuple[list[TopOp], dict[str, int]]:
    """Ops aggregated by name over the analysed steps, per step (device time goes to the
    innermost op whose runtime call launched the work), and every name's call count."""
    trace = ctx.trace
    n_steps = max(1, len(ctx.steps))
    by_name = ctx.ops_by_name()
    op_self = ctx.nest.op_self
    durs = ctx.durations(trace.ops)
    calls = {name: len(idx) for name, idx in by_name.items()}
    self_us: dict[str, float] = {}

    def self_of(name: str) -> float:
        """Self time of the op's calls, summed on first use: with device work it only breaks
        ties in device time, and only ties reaching the table need it."""
        found = self_us.get(name)
        if found is None:
            found = self_us[name] = float(sum(map(op_self.__getitem__, by_name[name])))
        return found

    if ctx.device_run:
        dev_us = _op_device_time(ctx)
        by_dev = sorted(calls, key=lambda k: -dev_us.get(k, 0.0))
        # Sorting by (-device, -self) is sorting by -device, then each run of equal device
        # time by -self: only the runs that reach into the table are sorted again.
        order: list[str] = []
        needed = limit if limit >= 0 else len(by_dev)  # order[:limit] below reads this many
        lo = 0
        while lo < len(by_dev) and len(order) < needed:
            dev = dev_us.get(by_dev[lo], 0.0)
            hi = lo + 1
            while hi < len(by_dev) and dev_us.get(by_dev[hi], 0.0) == dev:
                hi += 1
            order += sorted(by_dev[lo:hi], key=lambda k: -self_of(k))
            lo = hi
    else:
        dev_us = {}
        order = sorted(calls, key=lambda k: -self_of(k))
    rows = [
        TopOp(
            name=name,
            calls=calls[name],
            self_cpu_us=self_of(name) / n_steps,
            device_us=dev_us.get(name, 0.0) / n_steps,
            cpu_us=float(sum(map(durs.__getitem__, by_name[name]))) / n_steps,
        )
        for name in order[:limit]
    ]
    return rows, calls


def _op_device_time(ctx: Context) -> dict[str, float]:
    """Device time per op name: each linked device span in a step, added to the innermost op
    whose runtime call launched it, in trace order (kernels, memcpys, memsets)."""
    trace = ctx.trace
    rt_op = [*ctx.nest.rt_op, -1]  # index -1 (not linked) reads the sentinel
    all_ops = trace.ops
    ids = Ids()
    owners: list[int] = []
    durations: list[float] = []
    for spans, rts, where in (
        (trace.kernels, ctx.links.kernel_rt, ctx.step_of_kernel),
        (trace.memcpys, ctx.links.memcpy_rt, ctx.step_of_memcpy),
        (trace.memsets, ctx.links.memset_rt, ctx.step_of_memset),
    ):
        op_of = list(map(rt_op.__getitem__, rts))
        dur: Sequence[float] = ctx.durations(spans)
        if min(op_of, default=0) < 0 or min(where, default=0) < 0:  # keep those that count
            keep = list(map(and_, map(le, repeat(0), op_of), map(le, repeat(0), where)))
            op_of = list(compress(op_of, keep))
            dur = list(compress(dur, keep))
        owners.extend(map(ids.__getitem__, map(_NAME, map(all_ops.__getitem__, op_of))))
        durations.extend(dur)
    # Per-name running sums in a list: the additions of a dict-per-span loop, in its order.
    totals = [0.0] * len(ids)
    for i, value in zip(owners, durations):
        totals[i] += value
    return dict(zip(ids, totals))
