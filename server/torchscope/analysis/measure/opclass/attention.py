"""Attention: the fused scaled-dot-product kernels (flash, memory-efficient, cuDNN, the CPU
flash kernel) and their backward ops, from the recorded query, key and value shapes
(``B, H, L, E``; grouped-query attention's key and value may have fewer heads).

FLOPs are ``torch.utils.flop_counter``'s: 2·B·H·L·S·(E + Ev) forward (scores and their product
with the values) and 2·B·H·L·S·(3E + 2Ev) backward (the scores recomputed, four products for
the gradients). As there, a causal call is counted in full: the kernel skips the masked blocks,
so its achieved rate reads about half of what it does. The recorded dropout probability and
causal flag are kept for the advice (``flags``). The public ``scaled_dot_product_attention``
and the math fallback leave the work to the kernel or the ``bmm`` calls they run.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .cost import ATTENTION, Work, work
from .tensors import concrete, flag, nbytes, number, tensors

FORWARD = frozenset(
    {
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
    }
)
RAW = frozenset(
    {
        "aten::_flash_attention_forward",
        "aten::_efficient_attention_forward",
        "aten::_flash_attention_backward",
        "aten::_efficient_attention_backward",
    }
)
"""The kernels' own entry points, which take ``B, L, H, E`` (the sequence before the heads)."""
BACKWARD = frozenset(f"{n}_backward" for n in FORWARD) | {n for n in RAW if n.endswith("_backward")}
NAMES = FORWARD | BACKWARD | RAW


def is_attention(name: str) -> bool:
    """Any attention op: the fused kernels, the public op and the math fallback."""
    return "attention" in name and (name.startswith("aten::") or name.startswith("flash_attn"))


class Flags(NamedTuple):
    dropout_p: float | None
    causal: bool | None


def flags(name: str, args: Any) -> Flags:
    """The recorded dropout probability and causal flag (None: not recorded)."""
    c = concrete(args)
    found = [i for i, x in enumerate(c) if number(x) is not None and "." in str(x)]
    if not found:
        return Flags(None, None)
    at = found[0]
    return Flags(number(c[at]), flag(c[at + 1]) if at + 1 < len(c) else None)


def cost(name: str, args: Any) -> Work | None:
    ts = tensors(args)
    first = 1 if name in BACKWARD else 0
    if len(ts) < first + 3:
        return None
    q, k, v = ts[first : first + 3]
    if len(q[0]) != 4 or len(k[0]) != 4 or len(v[0]) != 4:
        return None  # a nested (variable-length) batch: no model
    if name in RAW:  # B, L, H, E → B, H, L, E
        q, k, v = (([t[0][0], t[0][2], t[0][1], t[0][3]], t[1], t[2]) for t in (q, k, v))
    b, h, length, e = q[0]
    s, ev = k[0][2], v[0][3]
    if k[0][3] != e or v[0][2] != s or k[0][0] != b:
        return None
    pairs = 2.0 * b * h * length * s
    moved = nbytes(q) + nbytes(k) + nbytes(v) + b * h * length * ev * q[2]
    if first:
        moved += nbytes(ts[0]) + nbytes(q) + nbytes(k) + nbytes(v)  # grad_out, the gradients
        return work(pairs * (3 * e + 2 * ev), moved, q[1], ATTENTION)
    return work(pairs * (e + ev), moved, q[1], ATTENTION)
