"""GEMMs: ``mm``, ``addmm``, ``bmm``, ``baddbmm`` — 2·M·N·K (``torch.utils.flop_counter``'s
count) and the bytes of their operands and output. ``matmul``/``linear`` are GEMMs too, but
leave the work to the ``mm``/``addmm``/``bmm`` they call (one level gets it).

A recurrent layer is its GEMMs too: the CPU's LSTM layer (``mkldnn_rnn_layer``: input
``T, B, I``, ``w_ih`` ``4H, I``, ``w_hh`` ``4H, H``) does two per time step, 2·T·B·4H·(I + H)
FLOPs (what ``FlopCounterMode`` counts for the same layer unrolled into ``LSTMCell`` calls; it
counts nothing for the fused layer). ``lstm``/``gru``/``rnn_*`` leave the work to the layers
or GEMMs they call."""

from __future__ import annotations

from typing import Any, NamedTuple

from .cost import GEMM, Work, work
from .tensors import numel, tensors

NAMES = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm"})
"""``_scaled_mm`` is an fp8 ``mm`` with scales (its first two arguments are the operands)."""
RNN_LAYER = "aten::mkldnn_rnn_layer"
CALLERS = frozenset(
    {
        "aten::matmul",
        "aten::linear",
        "aten::einsum",
        "aten::addbmm",
        "aten::lstm",
        "aten::gru",
        "aten::rnn_tanh",
        "aten::rnn_relu",
        "aten::lstm_cell",
        "aten::gru_cell",
    }
)


class Dims(NamedTuple):
    """One GEMM call's shape: ``batch`` products of (m × k) · (k × n)."""

    batch: int
    m: int
    n: int
    k: int


def dims(name: str, args: Any) -> tuple[Dims, str, int] | None:
    """The GEMM's dimensions, dtype and itemsize from its recorded operands (None: unknown);
    a recurrent layer's are its time steps' (``batch`` = T steps of B × (I+H) · (I+H) × 4H)."""
    ts = tensors(args)
    if name == RNN_LAYER:
        w = _rnn_layer(args)
        if w is None:
            return None
        (steps, batch, width), (gates, _), (_, hidden) = ts[0][0], ts[1][0], ts[2][0]
        return Dims(steps, batch, gates, width + hidden), ts[0][1], ts[0][2]
    operands = ts[1:3] if name in ("aten::addmm", "aten::baddbmm") else ts[:2]
    if len(operands) != 2:
        return None
    (a, dtype, size), (b, _, _) = operands
    if len(a) != len(b) or len(a) not in (2, 3) or a[-1] != b[-2]:
        return None
    return Dims(a[0] if len(a) == 3 else 1, a[-2], b[-1], a[-1]), dtype, size


def _rnn_layer(args: Any) -> Work | None:
    ts = tensors(args)
    if len(ts) < 3 or len(ts[0][0]) != 3 or len(ts[1][0]) != 2 or len(ts[2][0]) != 2:
        return None
    (x, dtype, size), (w_ih, _, _), (w_hh, _, _) = ts[:3]
    steps, batch, width = x
    gates, hidden = w_ih[0], w_hh[1]
    if w_ih[1] != width or w_hh[0] != gates:
        return None
    flops = 2.0 * steps * batch * gates * (width + hidden)
    moved = (numel(x) + numel(w_ih) + numel(w_hh) + steps * batch * hidden) * size
    return work(flops, moved, dtype, GEMM)


def cost(name: str, args: Any) -> Work | None:
    if name == RNN_LAYER:
        return _rnn_layer(args)
    found = dims(name, args)
    if found is None:
        return None
    d, dtype, size = found
    moved = d.batch * (d.m * d.k + d.k * d.n + d.m * d.n) * size
    if name in ("aten::addmm", "aten::baddbmm"):
        bias = tensors(args)[:1]
        moved += sum(numel(t[0]) * t[2] for t in bias)
    return work(2.0 * d.batch * d.m * d.n * d.k, moved, dtype, GEMM)
