"""``unaligned-fp16``: half-precision matmuls with dimensions not a multiple of 8.

TorchTidy's ``MatMulDimInFP16Pattern``: fp16/bf16 tensor cores need the last two dimensions
of every input to be multiples of 8; otherwise cuBLAS pads or falls back to slower kernels.
Pad the model dimensions (vocabulary, hidden size, batch×sequence) to multiples of 8.
"""

from __future__ import annotations

from typing import Any

from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import count_per_step, op_location, per_step_median
from .base import Rule
from .matmul_common import MATMUL_OPS, kernels_of_op, shapes_recorded

ALIGNMENT = 8
"""Elements: 16 bytes of fp16/bf16, what tensor-core GEMMs want (NVIDIA's matmul guide)."""

HALF_TYPES = frozenset({"c10::Half", "c10::BFloat16", "Half", "BFloat16"})


def _aligned(dims: Any) -> bool:
    if not isinstance(dims, list):
        return True
    for shape in dims:
        if isinstance(shape, list):
            for d in shape[-2:]:
                if isinstance(d, int) and d % ALIGNMENT:
                    return False
    return True


class UnalignedFp16(Rule):
    """fp16/bf16 matmuls with dimensions not multiple of 8."""

    id = "unaligned-fp16"
    title = "fp16/bf16 matmul with dimensions not a multiple of 8"
    severity = "information"
    source = "TorchTidy (torch/profiler/_pattern_matcher.py) MatMulDimInFP16Pattern"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.device_run:
            return "no GPU activity (tensor-core alignment is a GPU matter)"
        if not shapes_recorded(ctx):
            return "input shapes not recorded (profile with record_shapes=True)"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        hits: list[tuple[int, float]] = []
        first = -1
        example: Any = None
        count = 0
        by_name = ctx.ops_by_name()
        for i in sorted(i for name in MATMUL_OPS for i in by_name.get(name, ())):
            o = trace.ops[i]
            types = o.args.get("Input type")
            if (
                not isinstance(types, list)
                or not types
                or not any(isinstance(t, str) and t in HALF_TYPES for t in types[:3])
            ):
                continue
            dims = o.args.get("Input Dims")
            if _aligned(dims):
                continue
            count += 1
            if first < 0:
                first, example = i, dims
            ks = kernels_of_op(ctx, i)
            hits.extend(
                (ctx.step_of_kernel[k], trace.kernels[k].end - trace.kernels[k].start) for k in ks
            )
        if count == 0:
            return []
        cost = per_step_median(ctx, hits)
        file, line = op_location(ctx, first)
        return [
            self.finding(
                f"{count_per_step(count, ctx)} half-precision matmuls per step "
                f"have dimensions not a multiple of {ALIGNMENT} (e.g. {trace.ops[first].name} "
                f"{example}), "
                f"{format_duration(cost)} of GPU time: pad them to multiples of {ALIGNMENT} "
                "for tensor cores",
                cost,
                line=line,
                file=file,
                example=str(example),
            )
        ]


RULE = UnalignedFp16()
