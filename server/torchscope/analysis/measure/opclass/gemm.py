"""GEMMs: ``mm``, ``addmm``, ``bmm``, ``baddbmm`` — 2·M·N·K (``torch.utils.flop_counter``'s
count) and the bytes of their operands and output. ``matmul``/``linear`` are GEMMs too, but
leave the work to the ``mm``/``addmm``/``bmm`` they call (one level gets it)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .cost import GEMM, Work, work
from .tensors import numel, tensors

NAMES = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})
CALLERS = frozenset(
    {"aten::matmul", "aten::linear", "aten::einsum", "aten::_scaled_mm", "aten::addbmm"}
)


class Dims(NamedTuple):
    """One GEMM call's shape: ``batch`` products of (m × k) · (k × n)."""

    batch: int
    m: int
    n: int
    k: int


def dims(name: str, args: Any) -> tuple[Dims, str, int] | None:
    """The GEMM's dimensions, dtype and itemsize from its recorded operands (None: unknown)."""
    ts = tensors(args)
    operands = ts[1:3] if name in ("aten::addmm", "aten::baddbmm") else ts[:2]
    if len(operands) != 2:
        return None
    (a, dtype, size), (b, _, _) = operands
    if len(a) != len(b) or len(a) not in (2, 3) or a[-1] != b[-2]:
        return None
    return Dims(a[0] if len(a) == 3 else 1, a[-2], b[-1], a[-1]), dtype, size


def cost(name: str, args: Any) -> Work | None:
    found = dims(name, args)
    if found is None:
        return None
    d, dtype, size = found
    moved = d.batch * (d.m * d.k + d.k * d.n + d.m * d.n) * size
    if name in ("aten::addmm", "aten::baddbmm"):
        bias = tensors(args)[:1]
        moved += sum(numel(t[0]) * t[2] for t in bias)
    return work(2.0 * d.batch * d.m * d.n * d.k, moved, dtype, GEMM)
