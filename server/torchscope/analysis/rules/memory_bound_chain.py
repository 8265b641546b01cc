"""``memory-bound-chain``: several elementwise ops in a row over the same tensor shape, each
of them memory-bound.

Each op reads its input(s) from memory and writes its output back; a fused kernel
(``torch.compile``) reads once and writes once. Found among the top-level ops of each step, in
order: a run of at least ``MIN_CHAIN`` elementwise ops whose first tensors have the same shape,
each memory-bound (bytes, not math or overhead, set its time):

- on a GPU, its kernels move bytes at ``MEMORY_BOUND_KERNEL`` or more of the bandwidth (device
  time, which no other process on the host slows);
- on a CPU, by its work rather than by how fast it ran (another process holding the core slows
  every op alike, and a chain stays a chain): its arithmetic intensity is below the ridge point
  (peak FLOP/s / bandwidth) and its bytes take longer at the peak bandwidth than one op's
  dispatch. The achieved GB/s is reported, not judged.
"""

from __future__ import annotations

from ..formatting import format_bytes, format_duration, format_share
from ..index.context import Context
from ..measure.efficiency import Efficiency, missing_peak
from ..measure.opclass import base_name, op_class
from ..measure.opclass.cost import ELEMENTWISE, LAYOUT
from ..measure.opclass.passes import WRITE_ONLY
from ..measure.roofline import (
    OPTIMIZER_ADVICE,
    bandwidth_phrase,
    format_gbps,
    in_optimizer_step,
    ridge_point,
)
from ..measure.stages import Metrics
from ..results import Finding, Peaks
from ..verdict.verdict import DEFAULT_DISPATCH_FLOOR_US
from ._common import op_location
from .base import Rule

MIN_CHAIN = 3
"""Three passes over the same tensor where one would do is the smallest chain worth fusing."""

MEMORY_BOUND_KERNEL = 0.3
"""A GPU op whose kernels reach ≥ 30 % of the bandwidth spends its time on bytes: its
arithmetic is ~1 FLOP per element, far under any ridge point, and a kernel too small to be
bandwidth-bound (latency-bound) runs far below it."""

MIN_CHAIN_US = 50.0
"""Chains shorter than this per step are not worth a compile."""


def _memory_bound(ctx: Context, eff: Efficiency, i: int, peaks: Peaks, floor_us: float) -> bool:
    """Op ``i`` (with work and time) is memory-bound: see the module's docstring."""
    w, bandwidth = eff.work[i], peaks.bandwidth_gbps or 0.0
    if bandwidth <= 0 or w.bytes <= 0:
        return False
    if ctx.device_run:
        return w.bytes / eff.time_us[i] / 1e3 >= MEMORY_BOUND_KERNEL * bandwidth
    ridge = ridge_point(peaks)
    below_ridge = ridge is None or w.flops / w.bytes < ridge
    return below_ridge and w.bytes / bandwidth / 1e3 >= floor_us


def _chains(ctx: Context, eff: Efficiency, peaks: Peaks) -> list[list[int]]:
    """Runs of consecutive top-level memory-bound elementwise ops on one shape, per thread."""
    parent = ctx.nest.op_parent
    ops = ctx.trace.ops
    m = ctx.measurements
    floor_us = m.dispatch_floor_us if m is not None else DEFAULT_DISPATCH_FLOOR_US
    same_step = ctx.step_of_op.__getitem__
    runs: list[list[int]] = []
    current: dict[int, list[int]] = {}
    for i in range(len(ops)):
        if parent[i] >= 0 or ctx.step_of_op[i] < 0:
            continue
        track = ops[i].track
        run = current.setdefault(track, [])
        w = eff.work.get(i)
        if w is None and op_class(ops[i].name, ops[i].args) == LAYOUT:
            continue  # a view or an eval-mode dropout moves nothing: neither link nor break
        base = base_name(ops[i].name)
        fits = (
            w is not None
            and eff.time_us.get(i)
            and w.op_class == ELEMENTWISE
            and base not in WRITE_ONLY
            and _memory_bound(ctx, eff, i, peaks, floor_us)
        )
        if fits and w is not None:
            if run and (eff.work[run[-1]].flops != w.flops or same_step(run[-1]) != same_step(i)):
                runs.append(run)  # another shape (same flops = same element count) or step
                run = current[track] = []
            run.append(i)
        else:
            if run:
                runs.append(run)
            current[track] = []
    runs.extend(r for r in current.values() if r)
    return [r for r in runs if len(r) >= MIN_CHAIN]


class MemoryBoundChain(Rule):
    """Elementwise ops in a row that fusion would collapse into one pass."""

    id = "memory-bound-chain"
    title = "chain of memory-bound elementwise ops (fuse them)"
    severity = "information"
    source = "roofline model; torch.compile's pointwise fusion (TorchInductor)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        eff = measured.efficiency
        if eff.peaks is None or not eff.peaks.bandwidth_gbps:
            return missing_peak(ctx).replace("no peak", "no bandwidth", 1)
        if not any(w.kind == "memory" for w in eff.work.values()):
            return "no elementwise op with recorded shapes (profile with record_shapes=True)"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        eff = measured.efficiency
        if eff.peaks is None:
            return []
        chains = _chains(ctx, eff, eff.peaks)
        if not chains:
            return []
        steps = max(1, len(ctx.steps))
        longest = max(chains, key=len)
        members = [i for c in chains if len(c) == len(longest) for i in c]
        totals = eff.totals(members)
        per_step = totals.time_us / steps
        if per_step < MIN_CHAIN_US:
            return []
        rates = eff.rates(totals)
        ops = ctx.trace.ops
        names = ", ".join(dict.fromkeys(ops[i].name for i in longest))
        dims = ops[longest[0]].args.get("Input Dims")
        shape = dims[0] if isinstance(dims, list) and dims else "?"
        share = f", {format_share(rates.efficiency)}" if rates.efficiency is not None else ""
        file, line = op_location(ctx, longest[0])
        n = len(longest)
        runs = len(members) / n / steps
        where = f"on {shape}" if runs <= 1 else f"{runs:.3g} times per step, e.g. on {shape}"
        fix = (
            "Fused (torch.compile) they read and write the tensor once: try Compare with "
            "torch.compile"
        )
        if in_optimizer_step(ctx, longest[0]):
            fix = f"Inside Optimizer.step: {OPTIMIZER_ADVICE}"
        return [
            self.finding(
                f"{n} elementwise ops in a row {where} {eff.work[longest[0]].dtype} "
                f"({names}), each memory-bound: {format_gbps(rates.gbps or 0.0)}{share} of "
                f"{bandwidth_phrase(eff.peaks)}, {format_duration(per_step)} and "
                f"{format_bytes(totals.bytes / steps)} moved per step. {fix}",
                per_step * (1.0 - 1.0 / n),
                line=line,
                file=file,
                ops=n,
                runs_per_step=runs,
                gbps=rates.gbps,
                efficiency=rates.efficiency,
                bytes_per_step=totals.bytes / steps,
            )
        ]


RULE = MemoryBoundChain()
