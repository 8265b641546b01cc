"""The op-class cost model, one home (issue 55): every op's class, FLOPs and bytes.

``op_class(name, args)`` names an op's class (``cost.CLASSES``: GEMM, convolution, attention,
normalization, elementwise, reduction, RNG, copy/layout, indexing/embedding, communication,
optimizer; None: not classified). ``op_cost(name, args)`` is the one function the efficiency
stage, the verdict, the op table's columns and every rule read FLOPs and bytes from: one module
per class computes them from the recorded shapes, dtypes and ``Concrete Inputs``. None where
the class has no model or the shapes were not recorded — never a GEMM guess.

Only one level of a nested call gets the work: ``matmul``/``linear`` leave it to the
``mm``/``addmm`` inside, ``conv2d`` to ``convolution``, ``scaled_dot_product_attention`` to the
kernel it picks, ``layer_norm`` to ``native_layer_norm``. Elementwise ops that call another
elementwise op (``relu`` → ``clamp_min``) both get it; callers that add up work take only the
outermost op with work (see ``efficiency``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import attention, conv, elementwise, gemm, indexing, layout, norm, reduction, rng
from .comm import is_comm
from .cost import (
    ATTENTION,
    CLASSES,
    COMMUNICATION,
    CONVOLUTION,
    ELEMENTWISE,
    GEMM,
    INDEXING,
    LAYOUT,
    MATH,
    NORMALIZATION,
    OPTIMIZER,
    REDUCTION,
    RNG,
    Work,
)
from .optimizer import in_step, is_optimizer
from .tensors import base_name

__all__ = [
    "CLASSES",
    "MATH",
    "Work",
    "base_name",
    "has_work",
    "in_step",
    "is_memory_op",
    "op_class",
    "op_cost",
]

_BY_BASE: tuple[tuple[frozenset[str], str], ...] = (
    (norm.NAMES, NORMALIZATION),
    (rng.NAMES, RNG),
    (elementwise.NAMES, ELEMENTWISE),
    (reduction.NAMES, REDUCTION),
    (indexing.NAMES, INDEXING),
    (layout.NAMES, LAYOUT),
)


def _class_of_name(name: str) -> str | None:
    if is_comm(name):
        return COMMUNICATION
    if is_optimizer(name):
        return OPTIMIZER
    if name in gemm.NAMES or name in gemm.CALLERS or name == gemm.RNN_LAYER:
        return GEMM
    if attention.is_attention(name):
        return ATTENTION
    if conv.is_conv(name):
        return CONVOLUTION
    if not name.startswith("aten::"):
        return None
    base = base_name(name)
    return next((cls for names, cls in _BY_BASE if base in names), None)


def op_class(name: str, args: Any = None) -> str | None:
    """The op's class (None: not classified). A dropout in eval mode is copy/layout: it
    returns its input."""
    cls = _class_of_name(name)
    if cls == RNG and args is not None and rng.is_noop(base_name(name), args):
        return LAYOUT
    return cls


def has_work(name: str) -> bool:
    """Whether ``op_cost`` can know the work of an op of this name (a check on the name alone,
    so callers can skip the other ops without reading their arguments)."""
    if name in gemm.NAMES or name in conv.NAMES or name in attention.NAMES:
        return True
    if name == gemm.RNN_LAYER:
        return True
    cls = _class_of_name(name)
    base = base_name(name)
    if cls == NORMALIZATION:
        return base in norm.KERNELS
    if cls == LAYOUT:
        return base in layout.COPIES
    return cls in (RNG, ELEMENTWISE, REDUCTION, INDEXING)


def is_memory_op(name: str) -> bool:
    """An op whose time is bytes moved or random numbers drawn (not arithmetic)."""
    return _class_of_name(name) in (ELEMENTWISE, REDUCTION, RNG, NORMALIZATION, LAYOUT, INDEXING)


_COSTS = {
    ELEMENTWISE: elementwise.cost,
    REDUCTION: reduction.cost,
    RNG: rng.cost,
    NORMALIZATION: norm.cost,
    LAYOUT: layout.cost,
    INDEXING: indexing.cost,
}


def op_cost(name: str, args: Any) -> Work | None:
    """FLOPs and bytes of one op call, or None when its class has no model or its shapes are
    unknown (and for the callers that leave the work to the op they call)."""
    if not isinstance(args, Mapping) or not has_work(name):
        return None
    if name in gemm.NAMES or name == gemm.RNN_LAYER:
        return gemm.cost(name, args)
    if name in conv.NAMES:
        return conv.cost(name, args)
    if name in attention.NAMES:
        return attention.cost(name, args)
    cls = op_class(name, args)
    model = _COSTS.get(cls) if cls is not None else None
    return model(name, args) if model is not None else None
