"""Convolutions: ``aten::convolution`` (1d/2d/3d, strided, padded, dilated, grouped, depthwise,
transposed) and ``aten::convolution_backward``, from the recorded input and weight shapes and
the ``Concrete Inputs`` (stride, padding, dilation, transposed, output_padding, groups,
output_mask).

FLOPs are ``torch.utils.flop_counter``'s: 2 × (output positions, or input positions for a
transposed conv) × batch × ``weight.numel()``. For the backward, the input gradient costs the
forward's FLOPs and the weight gradient the same again. The one difference from
``FlopCounterMode``: it counts a grouped conv's weight gradient as if ``groups`` were 1 (its
formula multiplies the full channel counts); here it is divided by ``groups``, the work the
kernel does (a depthwise conv's weight gradient is ``groups``× smaller than a dense one's).
The callers (``conv2d``, ``_convolution``, ``mkldnn_convolution`` …) are convolutions too, and
leave the work to ``aten::convolution``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .cost import CONVOLUTION, Work, work
from .tensors import concrete, flag, int_list, numel, tensors

FORWARD = "aten::convolution"
BACKWARD = "aten::convolution_backward"
NAMES = frozenset({FORWARD, BACKWARD})


def is_conv(name: str) -> bool:
    """Any convolution op, the callers and backend kernels included."""
    return "conv" in name and name.startswith("aten::") and "convert" not in name


class Shape(NamedTuple):
    """One convolution call: what its advice (``measure/slow_math``) reads."""

    batch: int
    c_in: int
    c_out: int
    groups: int
    kernel: list[int]
    out_spatial: list[int]
    in_spatial: list[int]
    transposed: bool
    dtype: str
    itemsize: int


def _out_spatial(
    x: list[int], w: list[int], c: list[Any], at: int, transposed: bool
) -> list[int] | None:
    stride, padding, dilation = (int_list(c[i]) for i in (at, at + 1, at + 2))
    extra = int_list(c[at + 4]) if transposed else None
    n = len(x) - 2
    if stride is None or padding is None or dilation is None or n < 1:
        return None
    if min(len(stride), len(padding), len(dilation)) < n:
        return None
    k = w[2:]
    if transposed:
        pad_out = extra if extra is not None and len(extra) >= n else [0] * n
        return [
            (x[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + pad_out[i] + 1
            for i in range(n)
        ]
    return [
        (x[2 + i] + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1
        for i in range(n)
    ]


def shape(name: str, args: Any) -> Shape | None:
    """The convolution's shape (forward: from input and weight; backward: from grad_out,
    input and weight), or None when the recorded arguments do not say."""
    ts, c = tensors(args), concrete(args)
    first = 1 if name == BACKWARD else 0
    at = first + 3  # stride's index
    if len(ts) < first + 2 or len(c) < at + 6:
        return None
    (x, dtype, size), (w, _, _) = ts[first], ts[first + 1]
    transposed, groups = flag(c[at + 3]), int_list(f"[{c[at + 5]}]")
    if transposed is None or not groups or groups[0] < 1 or len(w) != len(x) or len(x) < 3:
        return None
    out = _out_spatial(x, w, c, at, transposed)
    if out is None or min(out) <= 0:
        return None
    g = groups[0]
    c_out = w[1] * g if transposed else w[0]
    return Shape(x[0], x[1], c_out, g, w[2:], out, x[2:], transposed, dtype, size)


def forward_flops(s: Shape) -> float:
    """2 × positions × batch × weight.numel() (positions: the output's, or a transposed conv's
    input's)."""
    positions = numel(s.in_spatial if s.transposed else s.out_spatial)
    weight = s.c_in * (s.c_out // s.groups) * numel(s.kernel)
    return 2.0 * positions * s.batch * weight


def cost(name: str, args: Any) -> Work | None:
    s = shape(name, args)
    if s is None:
        return None
    x = s.batch * s.c_in * numel(s.in_spatial)
    y = s.batch * s.c_out * numel(s.out_spatial)
    w = s.c_in * (s.c_out // s.groups) * numel(s.kernel)
    if name == FORWARD:
        return work(forward_flops(s), (x + w + y) * s.itemsize, s.dtype, CONVOLUTION)
    c = concrete(args)
    if len(c) < 11 or not isinstance(c[10], str) or not c[10].startswith("["):
        return None  # which gradients were asked for is not recorded
    mask = [flag(m.strip()) for m in c[10].strip("[]").split(",")]
    grad_in = bool(mask and mask[0])
    grad_w = len(mask) > 1 and bool(mask[1])
    flops = forward_flops(s) * (int(grad_in) + int(grad_w))
    moved = (y + x + w + (x if grad_in else 0) + (w if grad_w else 0)) * s.itemsize
    return work(flops, moved, s.dtype, CONVOLUTION)
