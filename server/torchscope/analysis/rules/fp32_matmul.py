"""``fp32-matmul``: float32 matmuls on a TF32-capable GPU that do not use TF32.

TorchTidy's ``FP32MatMulPattern``: on Ampere and newer (compute capability ≥ 8.0) TF32 tensor
cores run fp32 GEMMs several times faster at a precision most training tolerates. PyTorch
leaves TF32 off for matmuls by default since 1.12. We read the launched kernel names: a kernel
with ``tf32`` in its name already uses it.
"""

from __future__ import annotations

from ..formatting import format_duration
from ..index.context import Context
from ..measure.stages import Metrics
from ..results import Finding
from ._common import count_per_step, op_location, per_step_median
from .base import Rule
from .matmul_common import MATMUL_OPS, compute_capability, kernels_of_op, shapes_recorded

TF32_MIN_CAPABILITY = (8, 0)
"""TF32 tensor cores exist from Ampere (sm_80) on."""

FP32_MATMUL_MIN_US = 10.0
"""Per-step device time below which the switch is not worth mentioning."""


TF32_KERNEL_MARKERS = ("tf32", "s1688", "s16816", "tensorop_s")
"""Kernel-name parts of TF32 tensor-core GEMMs (cuBLAS/CUTLASS ``…tensorop_s1688gemm…``);
plain fp32 SIMT GEMMs are ``…sgemm…``."""


def _uses_tf32(kernel: str) -> bool:
    low = kernel.lower()
    return any(m in low for m in TF32_KERNEL_MARKERS)


class Fp32MatMul(Rule):
    """fp32 GEMMs not using TF32 on Ampere+."""

    id = "fp32-matmul"
    title = "fp32 matmul without TF32 on a TF32-capable GPU"
    severity = "information"
    source = "TorchTidy (torch/profiler/_pattern_matcher.py) FP32MatMulPattern"

    def skip(self, ctx: Context, measured: Metrics) -> str | None:
        if not ctx.device_run:
            return "no GPU activity"
        cc = compute_capability(ctx)
        if cc is None:
            return "the trace does not name the GPU's compute capability"
        if cc < TF32_MIN_CAPABILITY:
            return f"the GPU (sm_{cc[0]}{cc[1]}) has no TF32 tensor cores"
        if not shapes_recorded(ctx):
            return "input types not recorded (profile with record_shapes=True)"
        return None

    def match(self, ctx: Context, measured: Metrics) -> list[Finding]:
        trace = ctx.trace
        hits: list[tuple[int, float]] = []
        first = -1
        count = 0
        by_name = ctx.ops_by_name()
        for i in sorted(i for name in MATMUL_OPS for i in by_name.get(name, ())):
            o = trace.ops[i]
            types = o.args.get("Input type")
            if not isinstance(types, list) or "float" not in types[:3]:
                continue
            ks = kernels_of_op(ctx, i)
            if not ks or any(_uses_tf32(trace.kernels[k].name) for k in ks):
                continue
            count += 1
            first = i if first < 0 else first
            hits.extend(
                (ctx.step_of_kernel[k], trace.kernels[k].end - trace.kernels[k].start) for k in ks
            )
        cost = per_step_median(ctx, hits)
        if cost < FP32_MATMUL_MIN_US:
            return []
        file, line = op_location(ctx, first)
        return [
            self.finding(
                f"{count_per_step(count, ctx)} fp32 matmuls per step "
                f"({format_duration(cost)} of GPU time) run without TF32: "
                "torch.backends.cuda.matmul.allow_tf32 = True or "
                "torch.set_float32_matmul_precision('high') if the precision allows",
                cost,
                line=line,
                file=file,
            )
        ]


RULE = Fp32MatMul()
