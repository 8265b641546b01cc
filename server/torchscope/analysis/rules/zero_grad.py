"""``zero-grad``: ``optimizer.zero_grad()`` fills gradients with zeros instead of freeing them.

TorchTidy's ``GradNotSetToNonePattern``: ``aten::zero_`` calls under ``Optimizer.zero_grad``
mean ``set_to_none=False``: one memset-like kernel per parameter per step, and the backward
pass then adds into those zeros instead of writing. ``zero_grad(set_to_none=True)`` (the
default since torch 2.0) skips both.
"""

from __future__ import annotations

from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import (
    count_per_step,
    distinct_names,
    indices_named,
    op_location,
    per_step_median,
)
from .base import Rule


def _is_zero_grad(name: str) -> bool:
    return (
        name.startswith("Optimizer.zero_grad")
        or name.endswith(": zero_grad")
        or name == "## zero_grad ##"
    )


class ZeroGrad(Rule):
    """Gradients zeroed instead of set to None."""

    id = "zero-grad"
    title = "zero_grad() zeroes gradients instead of setting them to None"
    severity = "information"
    source = "TorchTidy (torch/profiler/_pattern_matcher.py) GradNotSetToNonePattern"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if "aten::zero_" not in measured.op_calls:
            return "no aten::zero_ calls in the steps"
        if not any(map(_is_zero_grad, distinct_names(ctx, ctx.trace.annotations))):
            return "no Optimizer.zero_grad annotation in the trace"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace, nest = ctx.trace, ctx.nest
        annotations = trace.annotations
        zero_grad = set(
            indices_named(ctx, annotations, filter(_is_zero_grad, distinct_names(ctx, annotations)))
        )
        under_zero_grad: dict[int, bool] = {}  # innermost annotation → inside zero_grad?
        hits: list[tuple[int, float]] = []
        first = -1
        count = 0
        ops = trace.ops
        for i in ctx.ops_by_name().get("aten::zero_", []):
            parent = nest.op_parent[i]
            if parent >= 0 and ops[parent][2] == "aten::zeros":
                continue
            ann = nest.op_ann[i]
            inside = under_zero_grad.get(ann)
            if inside is None:
                chain = nest.annotation_chain(ann)
                inside = under_zero_grad[ann] = any(a in zero_grad for a in chain)
            if not inside:
                continue
            count += 1
            first = i if first < 0 else first
            o = ops[i]
            hits.append((ctx.step_of_op[i], o[1] - o[0]))
        if count == 0:
            return []
        cost = per_step_median(ctx, hits)
        file, line = op_location(ctx, first)
        return [
            self.finding(
                f"optimizer.zero_grad() zeroes "
                f"{count_per_step(count, ctx)} gradient "
                f"tensors per step ({format_duration(cost)} CPU): use zero_grad(set_to_none=True)",
                cost,
                line=line,
                file=file,
                zero_calls=count,
            )
        ]


RULE = ZeroGrad()
