"""Shared helpers for the TorchTidy matmul patterns (fp32-matmul, unaligned-fp16)."""

from __future__ import annotations

from collections.abc import Sequence

from ..index.context import Context

MATMUL_OPS = frozenset({"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"})
"""The ops TorchTidy's matmul patterns inspect (the ones that launch the GEMM)."""


def shapes_recorded(ctx: Context) -> bool:
    """True when ops carry ``Input type``/``Input Dims`` (``record_shapes=True``)."""
    by_name = ctx.ops_by_name()
    for name in MATMUL_OPS:
        for i in by_name.get(name, ())[:1]:
            args = ctx.trace.ops[i].args
            return isinstance(args.get("Input type"), list) and isinstance(
                args.get("Input Dims"), list
            )
    return False


def kernels_of_op(ctx: Context, op: int) -> Sequence[int]:
    """Kernels launched by runtime calls whose innermost op is ``op``."""
    return ctx.op_kernels().get(op, [])


def compute_capability(ctx: Context) -> tuple[int, int] | None:
    """(major, minor) of the primary device, from deviceProperties."""
    primary = ctx.primary_device
    for d in ctx.trace.devices:
        if (primary is None or d.index == primary) and d.compute_capability:
            major, _, minor = d.compute_capability.partition(".")
            if major.isdigit() and minor.isdigit():
                return int(major), int(minor)
    return None
