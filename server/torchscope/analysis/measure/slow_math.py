"""Why one math op is far from the peak, by its class (``opclass``): what the
``low-efficiency`` verdict and the ``low-efficiency-gemm`` finding both say.

- a GEMM: thin (a dimension under ``THIN``: too little work per byte moved; a batched one
  whose thin dimension is an attention head's size, with a softmax in the call, is attention
  written by hand: sdpa), small, dimensions not multiples of 8 in fp16/bf16 on a GPU, fp32
  without tensor cores;
- a convolution: grouped/depthwise on a CPU, small channel counts, a small batch, then the
  layout (``channels_last``) and, on a GPU, ``torch.backends.cudnn.benchmark`` — never "thin
  matrix" (its recorded dimensions are an image and a kernel, not a matrix's);
- attention: the kernel's head size and dtype.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..index.context import Context
from .efficiency import Efficiency
from .opclass import attention, conv, gemm
from .opclass.cost import ATTENTION, CONVOLUTION
from .opclass.tensors import numel

THIN = 64

SMALL = 512
"""A GEMM whose every dimension is under 512 is too small to keep a device's matrix units (or a
CPU's cores) busy: its fixed cost per call (packing, thread start-up, the launch) is a large part
of its time. A convolution is held to it as the implicit GEMM it runs (batch × output pixels,
output channels, input channels × kernel size, per group)."""

MIN_GEMM_FLOPS = 1e6
"""GEMMs under 1 MFLOP per call (an 8×8 matmul is 1 kFLOP) are dispatch, not math: the verdict
(overhead-bound) already says what to do about them."""

HEAD_SIZES = frozenset({16, 32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 256})
"""Attention head sizes in use (the fused sdpa kernels take these): a thin batched GEMM whose
thin dimension is one, beside a softmax, is q·kᵀ or p·v."""

FEW_CHANNELS = 16
"""Under 16 channels in or out (per group) a convolution does too little work per output pixel
to fill a CPU's vector units or a GPU's tensor cores (a net's first conv on RGB has 3)."""


def input_dims(args: object) -> list[list[int]]:
    """The recorded input dimensions of an op (its ``Input Dims``, the non-empty lists)."""
    dims = args.get("Input Dims") if isinstance(args, Mapping) else None
    return [d for d in dims if isinstance(d, list) and d] if isinstance(dims, list) else []


def _sizes(d: gemm.Dims) -> list[int]:
    return [d.m, d.n, d.k]


def _has_softmax(ctx: Context) -> bool:
    return any("softmax" in n for n in ctx.ops_by_name())


def _gemm_cause(
    name: str, args: object, dtype: str, peak_key: str, ctx: Context, eff: Efficiency
) -> str:
    found = gemm.dims(name, args)
    sizes = _sizes(found[0]) if found is not None else []
    if found is not None and name == gemm.RNN_LAYER:
        d = found[0]
        return (
            f"a recurrent layer: each of its {d.batch} time steps is a {d.m}×{d.k} · "
            f"{d.k}×{d.n} GEMM; a larger batch gives each step more work"
        )
    if found is not None and min(sizes) < THIN:
        d = found[0]
        head = min(d.k, d.n)
        if d.batch > 1 and head in HEAD_SIZES and _has_softmax(ctx):
            return (
                f"attention written by hand (a head size of {head}, beside a softmax): use "
                "torch.nn.functional.scaled_dot_product_attention, one fused kernel that never "
                "writes the L×S scores to memory"
            )
        return (
            f"a thin matrix (a dimension of {min(sizes)}): too little work per byte moved; "
            "batch several of them into one larger GEMM"
        )
    if ctx.device_run and dtype in ("float16", "bfloat16") and any(x % 8 for x in sizes):
        return "dimensions not multiples of 8: tensor cores pad or fall back; pad to 8/16"
    if _fp32_without_tf32(dtype, peak_key, ctx, eff):
        return "fp32 without tensor cores: torch.set_float32_matmul_precision('high')"
    if sizes and max(sizes) < SMALL:
        return "matrices too small to keep the device busy: batch them"
    return "check the thread count, the dtype and non-contiguous (transposed) inputs"


def _fp32_without_tf32(dtype: str, peak_key: str, ctx: Context, eff: Efficiency) -> bool:
    peaks = eff.peaks
    fp32 = ctx.device_run and dtype == "float32" and peak_key == "float32"
    return fp32 and peaks is not None and "tfloat32" in peaks.matmul_gflops


def _conv_cause(s: conv.Shape, peak_key: str, ctx: Context, eff: Efficiency) -> str:
    if s.groups > 1 and not ctx.device_run:
        kind = "depthwise" if s.groups == s.c_in else f"grouped, groups={s.groups}"
        return (
            f"a {kind} convolution on a CPU: its kernels run far below a dense convolution's "
            "rate; try channels_last (model.to(memory_format=torch.channels_last)), or fewer "
            "groups"
        )
    few = min(s.c_in, s.c_out) // s.groups
    if few < FEW_CHANNELS:
        return (
            f"small channel counts (C_in={s.c_in}, C_out={s.c_out}): too little work per "
            "output pixel to fill the vector units; channels_last "
            "(model.to(memory_format=torch.channels_last)) helps, the other convolutions "
            "matter more"
        )
    if s.batch < 4:
        return f"a batch of {s.batch}: larger batches give each convolution call more work"
    if ctx.device_run and s.dtype in ("float16", "bfloat16") and (s.c_in % 8 or s.c_out % 8):
        return "channel counts not multiples of 8: tensor cores pad or fall back; pad to 8"
    if ctx.device_run:
        tf32 = _fp32_without_tf32(s.dtype, peak_key, ctx, eff)
        extra = "; torch.backends.cudnn.allow_tf32 = True for fp32" if tf32 else ""
        return (
            "torch.backends.cudnn.benchmark = True (cuDNN picks the fastest algorithm for these "
            f"shapes) and channels_last{extra}"
        )
    return (
        "the layout and the threads: channels_last (model.to(memory_format=torch.channels_last), "
        "oneDNN's native layout) and the intra-op thread count"
    )


def _attention_cause(name: str, args: object, ctx: Context) -> str:
    dims = input_dims(args)
    head = dims[1 if name in attention.BACKWARD else 0][-1] if len(dims) >= 3 else None
    where = f" at a head size of {head}" if head is not None else ""
    if ctx.device_run:
        return (
            f"the attention kernel{where}: check the dtype (fp16/bf16) and the backend sdpa "
            "picked (torch.nn.attention.sdpa_kernel)"
        )
    return f"the attention kernel{where}: check the thread count and the dtype"


def likely_cause(ctx: Context, eff: Efficiency, i: int) -> str:
    """Why math op ``i`` (with work) is far from the peak, one phrase with its remedy (the
    verdict's ``low-efficiency`` headline names the same cause as the rule)."""
    op = ctx.trace.ops[i]
    w = eff.work[i]
    peak_key = eff.peak_key.get(i, w.dtype)
    if w.op_class == CONVOLUTION:
        s = conv.shape(op.name, op.args)
        if s is not None:
            return _conv_cause(s, peak_key, ctx, eff)
    if w.op_class == ATTENTION:
        return _attention_cause(op.name, op.args, ctx)
    return _gemm_cause(op.name, op.args, w.dtype, peak_key, ctx, eff)


def is_small(ctx: Context, eff: Efficiency, i: int) -> bool:
    """Thin (a GEMM dimension under ``THIN``) or small (every dimension under ``SMALL``, a
    convolution's as its implicit GEMM, attention's L, S and E): the op's work per call is too
    little to amortise its fixed cost, whatever the dtype or layout."""
    op = ctx.trace.ops[i]
    cls = eff.work[i].op_class
    if cls == CONVOLUTION:
        s = conv.shape(op.name, op.args)
        if s is None:
            return False
        implicit = [
            s.batch * numel(s.out_spatial),
            s.c_out // s.groups,
            s.c_in // s.groups * numel(s.kernel),
        ]
        return max(implicit) < SMALL
    if cls == ATTENTION:
        dims = input_dims(op.args)
        q = dims[1 if op.name in attention.BACKWARD else 0] if len(dims) >= 3 else []
        return len(q) == 4 and max(q[2], q[3]) < SMALL
    found = gemm.dims(op.name, op.args)
    if found is None:
        return False
    sizes = _sizes(found[0])
    return min(sizes) < THIN or max(sizes) < SMALL
