"""A GEMM's shape from its recorded input dimensions, and why one is far from the peak: what
the ``low-efficiency`` verdict and the ``low-efficiency-gemm`` finding both say (thin, small,
dimensions not multiples of 8 in fp16/bf16, fp32 without tensor cores)."""

from __future__ import annotations

from collections.abc import Mapping

from ..index.context import Context
from .efficiency import Efficiency

THIN = 64

SMALL = 512
"""A GEMM whose every dimension is under 512 is too small to keep a device's matrix units (or a
CPU's cores) busy: its fixed cost per call (packing, thread start-up, the launch) is a large part
of its time."""

MIN_GEMM_FLOPS = 1e6
"""GEMMs under 1 MFLOP per call (an 8×8 matmul is 1 kFLOP) are dispatch, not math: the verdict
(overhead-bound) already says what to do about them."""


def input_dims(args: object) -> list[list[int]]:
    """The recorded input dimensions of an op (its ``Input Dims``, the non-empty lists)."""
    dims = args.get("Input Dims") if isinstance(args, Mapping) else None
    return [d for d in dims if isinstance(d, list) and d] if isinstance(dims, list) else []


def operand_sizes(name: str, args: object) -> list[int]:
    """The two matrix dimensions of each GEMM operand, from the recorded input shapes."""
    dims = input_dims(args)
    operands = dims[1:3] if name in ("aten::addmm", "aten::baddbmm") else dims[:2]
    return [x for d in operands for x in d[-2:]]


def cause_of_sizes(
    sizes: list[int], dtype: str, peak_key: str, ctx: Context, eff: Efficiency
) -> str:
    """Why a GEMM of these operand ``sizes`` is far from the peak, one phrase with its remedy."""
    if sizes and min(sizes) < THIN:
        return (
            f"a thin matrix (a dimension of {min(sizes)}): too little work per byte moved; "
            "batch several of them into one larger GEMM"
        )
    if ctx.device_run and dtype in ("float16", "bfloat16") and any(x % 8 for x in sizes):
        return "dimensions not multiples of 8: tensor cores pad or fall back; pad to 8/16"
    peaks = eff.peaks
    fp32 = ctx.device_run and dtype == "float32" and peak_key == "float32"
    if fp32 and peaks is not None and "tfloat32" in peaks.matmul_gflops:
        return "fp32 without tensor cores: torch.set_float32_matmul_precision('high')"
    if sizes and max(sizes) < SMALL:
        return "matrices too small to keep the device busy: batch them"
    return "check the thread count, the dtype and non-contiguous (transposed) inputs"


def is_small(name: str, args: object) -> bool:
    """Thin (a dimension under ``THIN``) or small (every dimension under ``SMALL``): the GEMM's
    work per call is too little to amortise its fixed cost, whatever the dtype or layout."""
    sizes = operand_sizes(name, args)
    return bool(sizes) and (min(sizes) < THIN or max(sizes) < SMALL)


def likely_cause(
    name: str, args: object, dtype: str, peak_key: str, ctx: Context, eff: Efficiency
) -> str:
    """Why one GEMM call is far from the peak, from its recorded shapes and dtype (the
    verdict's ``low-efficiency`` headline names the same cause as this rule)."""
    return cause_of_sizes(operand_sizes(name, args), dtype, peak_key, ctx, eff)
