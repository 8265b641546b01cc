"""``sync``: explicit synchronising calls inside steps (Nsight Systems' ``cuda_api_sync``
expert rule). Each one stops the CPU until the device drains, so the CPU cannot queue the
next work meanwhile; ``.item()``, ``.cpu()``, ``print(tensor)`` and ``torch.cuda.synchronize()``
are the usual sources."""

from __future__ import annotations

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import (
    RT_SYNC,
    count_per_step,
    per_step_median,
    positions,
    rt_location,
    runtime_kinds,
    top_op_of_rt,
)
from .base import Rule

SYNC_WARNING_SHARE = 0.05
"""Blocked ≥ 5 % of the step: a warning; below, information (Nsight lists every sync call;
we rank them and only raise the ones that matter)."""

SYNC_MIN_US = 10.0
"""Ignore groups that block less than 10 µs per step: below dispatch-noise level."""


class Sync(Rule):
    """Synchronising CUDA calls (device/stream/event synchronize) inside the steps."""

    id = "sync"
    title = "CPU waits for the GPU in a synchronising call"
    source = "Nsight Systems expert rule cuda_api_sync"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.trace.runtime:
            return "no CUDA runtime calls in the trace"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        groups: dict[tuple[str, str | None, int | None, str], list[int]] = {}
        runtime = ctx.trace.runtime
        # Synchronising calls are few: found by a C scan of the calls' kinds.
        for i in positions(runtime_kinds(ctx), RT_SYNC):
            if ctx.step_of_rt[i] < 0 or i in ctx.flush:
                continue
            file, line = rt_location(ctx, i)
            op = top_op_of_rt(ctx, i)
            under = ctx.trace.ops[op].name if op >= 0 else ""
            groups.setdefault((runtime[i].name, file, line, under), []).append(i)
        wall = median([s.wall_us for s in measured.steps]) if measured.steps else 0.0
        out: list[Finding] = []
        for (name, file, line, under), calls in groups.items():
            cost = per_step_median(
                ctx, ((ctx.step_of_rt[i], runtime[i].end - runtime[i].start) for i in calls)
            )
            if cost < SYNC_MIN_US:
                continue
            share = cost / wall if wall > 0 else 0.0
            inside = f" inside {under}" if under else ""
            hint = (
                " (.item()/.cpu() reads a value back)"
                if "_local_scalar_dense" in under
                or under in ("aten::item", "aten::to", "aten::cpu")
                else ""
            )
            out.append(
                self.finding(
                    f"{name}{inside}{hint} blocks the CPU "
                    f"{format_duration(cost)} per step "
                    f"({format_share(share)} of the step, {count_per_step(len(calls), ctx)} "
                    "calls per step); move it out of the loop "
                    "or read results back less often",
                    cost,
                    line=line,
                    file=file,
                    severity="warning" if share >= SYNC_WARNING_SHARE else "information",
                    call=name,
                    calls=len(calls),
                )
            )
        return out


RULE = Sync()
