"""What the cost model says of one op call: its class, FLOPs, bytes and dtype."""

from __future__ import annotations

from typing import NamedTuple

GEMM = "gemm"
CONVOLUTION = "convolution"
ATTENTION = "attention"
NORMALIZATION = "normalization"
ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
RNG = "rng"
LAYOUT = "copy/layout"
INDEXING = "indexing/embedding"
COMMUNICATION = "communication"
OPTIMIZER = "optimizer"

CLASSES = (
    GEMM,
    CONVOLUTION,
    ATTENTION,
    NORMALIZATION,
    ELEMENTWISE,
    REDUCTION,
    RNG,
    LAYOUT,
    INDEXING,
    COMMUNICATION,
    OPTIMIZER,
)
"""Every ``op_class`` an op can have (``top_ops[].op_class``; None: not classified)."""

MATH = frozenset({GEMM, CONVOLUTION, ATTENTION})
"""Classes whose time is arithmetic: held to the matmul peak (``Work.kind == "gemm"``)."""


class Work(NamedTuple):
    """What one op call asks for. ``kind`` is ``gemm`` for the math classes (FLOPs are the
    point, held to the matmul peak) and ``memory`` for the rest (bytes are)."""

    flops: float
    bytes: float
    dtype: str
    kind: str
    op_class: str = ""


def work(flops: float, moved: float, dtype: str, op_class: str) -> Work:
    return Work(
        float(flops), float(moved), dtype, "gemm" if op_class in MATH else "memory", op_class
    )
