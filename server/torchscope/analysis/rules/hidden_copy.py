"""``hidden-copy``: device copies issued by an op that is not a copy the user asked for.

The guide's 4096×4096 ``torch.compile`` case: an ``addmm`` GEMM epilogue first copies the
bias into the output (a 32 MB ``Memcpy DtoD``). Copies under ``aten::copy_``/``to``/``clone``
at the top level are the user's own and are not reported here.
"""

from __future__ import annotations

from itertools import compress
from operator import itemgetter, methodcaller

from ..formatting import format_bytes, format_duration
from ..index.context import Context
from ..index.link import copy_kind
from ..measure.stages import Metrics
from ..results import Finding
from ._common import (
    count_per_step,
    distinct_names,
    names,
    per_step_median,
    rt_location,
    step_slices,
    top_op_of_rt,
)
from .base import Rule

EXPLICIT_COPY_OPS = frozenset(
    {
        "aten::copy_",
        "aten::to",
        "aten::_to_copy",
        "aten::clone",
        "aten::contiguous",
        "aten::cuda",
        "aten::cpu",
        "aten::item",
        "aten::_local_scalar_dense",
        "aten::tensor",
        "aten::index_put_",
        "aten::pin_memory",
        "aten::_pin_memory",
    }
)
"""Top-level ops whose copies the user wrote (``.to()``, ``.copy_()``, ``.clone()``…)."""

HIDDEN_COPY_MIN_US = 5.0
"""Per-step device time below which hidden copies are not reported."""

_ARGS = itemgetter(4)
_GET_BYTES = methodcaller("get", "bytes")


class HiddenCopy(Rule):
    """Copies the user's code did not ask for."""

    id = "hidden-copy"
    title = "A copy the code did not ask for"
    severity = "information"
    source = "Hugging Face torch.profiler guide (torch.compile at 4096: the addmm bias copy)"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.trace.memcpys:
            return "no memcpy activity recorded"
        if not ctx.trace.ops:
            return "no CPU ops to attribute copies to"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        memcpys = trace.memcpys
        rts = ctx.links.memcpy_rt
        step_of = ctx.step_of_memcpy
        copy_names = names(ctx, memcpys)
        kind_of = {n: copy_kind(n) for n in distinct_names(ctx, memcpys)}
        groups: dict[tuple[str, str, str | None, int | None], list[int]] = {}
        for _, lo, hi in step_slices(ctx, memcpys, step_of):
            for m in compress(range(lo, hi), map((0).__le__, rts[lo:hi])):  # linked ones
                name = copy_names[m]
                if "Pageable" in name:
                    continue  # pageable copies are pageable-copy's
                r = rts[m]
                op = top_op_of_rt(ctx, r)
                if op < 0:
                    continue
                top = trace.ops[op][2]
                if top in EXPLICIT_COPY_OPS:
                    continue  # the user's own copy
                file, line = rt_location(ctx, r)
                groups.setdefault((top, kind_of[name], file, line), []).append(m)
        durations = ctx.durations(memcpys)
        out: list[Finding] = []
        for (top, kind, file, line), copies in groups.items():
            cost = per_step_median(
                ctx, zip(map(step_of.__getitem__, copies), map(durations.__getitem__, copies))
            )
            if cost < HIDDEN_COPY_MIN_US:
                continue
            sizes = map(_GET_BYTES, map(_ARGS, map(memcpys.__getitem__, copies)))
            nbytes = sum(b for b in sizes if isinstance(b, int))
            out.append(
                self.finding(
                    f"{top} issues {count_per_step(len(copies), ctx)} "
                    f"{kind} copies per step "
                    f"({format_bytes(nbytes / max(1, len(ctx.steps)))}, "
                    f"{format_duration(cost)} of device time) "
                    "that the code does not ask for",
                    cost,
                    line=line,
                    file=file,
                    op=top,
                    kind=kind,
                    copies=len(copies),
                    bytes=nbytes,
                )
            )
        return out


RULE = HiddenCopy()
