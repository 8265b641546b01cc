"""``compile-tax``: CPU time the ``torch.compile`` wrapper adds to every call.

Under ``torch.compile`` each call first runs the Dynamo cache lookup (guards), then the AOT
autograd / inductor wrapper around the generated kernels. The guide's 4096×4096 case: compile
kept the same cuBLAS kernel, added a copy, and doubled the CPU per step. This rule measures the
wrapper's own time: the compiled region and Dynamo lookup minus the ops and launches inside.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from ..formatting import format_duration, format_share
from ..index.columns import median
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import op_location, positions
from .base import Rule

WRAPPER_PREFIXES = (
    "TorchDynamo Cache Lookup",
    "Torch-Compiled Region",
    "CompiledFunction",
    "AOTDispatcher",
    "Pregraph bytecode",
    "## Call CompiledFxGraph",
)
"""Op/annotation names torch writes for the compile machinery (torch 2.0-2.13)."""

COMPILE_TAX_MIN_US = 20.0
"""Wrapper time per step below which it is not worth a finding (a guard check is ~5-10 µs)."""

COMPILE_TAX_MIN_SHARE = 0.05
"""…and at least 5 % of the step."""

WINDOW_MARGIN_US = 10.0
"""A call nested in an op starts inside the op's window; legacy traces round times to whole
µs, so the window searched is widened by this much on each side (any call found is still
checked against the nesting)."""

_GRAPH = re.compile(r"CompiledFxGraph (\w+)")


class CompileTax(Rule):
    """CPU time spent in torch.compile's wrapper per step."""

    id = "compile-tax"
    title = "torch.compile wrapper CPU time per call"
    severity = "information"
    source = "Hugging Face torch.profiler guide (measure torch.compile, don't assume)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not any(name.startswith(WRAPPER_PREFIXES) for name in measured.op_calls):
            return "no torch.compile regions in the steps"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace, nest = ctx.trace, ctx.nest
        names = {n for n in measured.op_calls if n.startswith(WRAPPER_PREFIXES)}
        wrappers = sorted(i for name in names for i in ctx.ops_by_name()[name])
        if not wrappers:
            return []
        inside_rt: dict[int, float] = {}
        # The runtime calls a wrapper makes directly start inside it: look for them only
        # among the calls starting in its window (with a margin, see WINDOW_MARGIN_US).
        rt_starts = ctx.starts(trace.runtime)
        for i in dict.fromkeys(wrappers):  # once each (overlapping steps list an op twice)
            op = trace.ops[i]
            lo = bisect_left(rt_starts, op.start - WINDOW_MARGIN_US)
            hi = bisect_right(rt_starts, op.end + WINDOW_MARGIN_US, lo)
            for r in positions(nest.rt_op, i, lo, hi):
                call = trace.runtime[r]
                inside_rt[i] = inside_rt.get(i, 0.0) + (call.end - call.start)
        totals = [0.0] * len(ctx.steps)
        by_name: dict[str, float] = {}
        for i in wrappers:
            own = max(0.0, nest.op_self[i] - inside_rt.get(i, 0.0))
            totals[ctx.step_of_op[i]] += own
            key = trace.ops[i].name.split(":")[0]
            by_name[key] = by_name.get(key, 0.0) + own
        cost = median(totals)
        wall = median([s.wall_us for s in measured.steps])
        if cost < COMPILE_TAX_MIN_US or wall <= 0 or cost / wall < COMPILE_TAX_MIN_SHARE:
            return []
        n = max(1, len(ctx.steps))
        parts = ", ".join(
            f"{k} {format_duration(v / n)}"
            for k, v in sorted(by_name.items(), key=lambda kv: -kv[1])
        )
        candidates = set(measured.op_calls) | {
            a.name for a in trace.annotations if "CompiledFxGraph" in a.name
        }
        graphs = sorted({m.group(1) for name in candidates if (m := _GRAPH.search(name))})
        code = ""
        if graphs:
            code = (
                f"; FX graph {', '.join(graphs[:3])}: its generated code is in the inductor cache "
                "($TORCHINDUCTOR_CACHE_DIR, default /tmp/torchinductor_$USER)"
            )
        file, line = op_location(ctx, wrappers[0])
        return [
            self.finding(
                f"torch.compile's wrapper costs {format_duration(cost)} "
                "CPU per step "
                f"({format_share(cost / wall)} of the step: {parts}) on top of the kernels; "
                "compare with "
                f"eager before keeping it{code}",
                cost,
                line=line,
                file=file,
                graphs=graphs,
            )
        ]


RULE = CompileTax()
