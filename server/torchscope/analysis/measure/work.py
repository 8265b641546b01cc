"""What one recorded op asks of the machine: FLOPs and bytes, from its recorded shapes.

``record_shapes=True`` gives every op its ``Input Dims`` and ``Input type``. From those:

- GEMMs (``mm``, ``addmm``, ``bmm``, ``baddbmm``) and ``convolution``: 2·M·N·K multiply-adds
  (the count ``torch.profiler``'s ``with_flops`` uses), and the bytes of their operands;
- elementwise ops and reductions: the bytes they must read and write (inputs, plus the output
  for out-of-place ops, plus ``self`` once more for in-place ones), and one FLOP per element
  (enough for the arithmetic intensity, which for these ops is far below any ridge point).
  An ``out=`` call (``torch.mul(x, 0.5, out=y)``) records its output as one more trailing
  argument; it is written, not read (``OUT_ARITY`` tells the ``out`` overloads apart).

Only one level of a nested call gets the work: ``aten::matmul``/``aten::linear`` leave it to
the ``mm``/``addmm`` inside, ``conv2d`` to ``convolution``. Elementwise ops that call another
elementwise op (``relu`` → ``clamp_min``) both get it; callers that add up work take only the
outermost op with work (see ``efficiency``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

DTYPES: dict[str, tuple[str, int]] = {
    "float": ("float32", 4),
    "double": ("float64", 8),
    "c10::Half": ("float16", 2),
    "c10::BFloat16": ("bfloat16", 2),
    "c10::Float8_e4m3fn": ("float8_e4m3fn", 1),
    "c10::Float8_e5m2": ("float8_e5m2", 1),
    "long int": ("int64", 8),
    "int": ("int32", 4),
    "short int": ("int16", 2),
    "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "bool": ("bool", 1),
    "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
}
"""``Input type`` strings as Kineto writes them → (torch dtype name, bytes per element)."""

GEMM_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})
CONV_OPS = frozenset({"aten::convolution"})

ELEMENTWISE = frozenset(
    {
        "add",
        "sub",
        "rsub",
        "mul",
        "div",
        "neg",
        "abs",
        "exp",
        "exp2",
        "expm1",
        "log",
        "log1p",
        "log2",
        "sqrt",
        "rsqrt",
        "pow",
        "reciprocal",
        "sigmoid",
        "tanh",
        "relu",
        "relu6",
        "gelu",
        "silu",
        "mish",
        "hardtanh",
        "hardsigmoid",
        "hardswish",
        "leaky_relu",
        "elu",
        "selu",
        "clamp",
        "clamp_min",
        "clamp_max",
        "threshold",
        "where",
        "maximum",
        "minimum",
        "sin",
        "cos",
        "tan",
        "erf",
        "erfc",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "frac",
        "square",
        "lerp",
        "addcmul",
        "addcdiv",
        "masked_fill",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_not",
        "logical_and",
        "logical_or",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "copy",
        "fill",
        "zero",
        "softmax",
        "_softmax",
        "log_softmax",
        "_log_softmax",
        "nan_to_num",
        "fmod",
        "remainder",
        "sigmoid_backward",
        "tanh_backward",
        "threshold_backward",
        "gelu_backward",
        "silu_backward",
        # random numbers: a pass that writes every element (dropout's mask is bernoulli_)
        "bernoulli",
        "uniform",
        "normal",
        "exponential",
        "random",
        "dropout",
        "native_dropout",
        "native_dropout_backward",
    }
)
"""Ops whose time is bytes moved: one pass over inputs and output (base names, no ``aten::``,
no trailing ``_``). Random-number ops are here too: generating a dropout mask is a pass over
memory, so its advice is fusion (``torch.compile``), not GEMM shapes."""

REDUCTIONS = frozenset(
    {
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "prod",
        "norm",
        "linalg_vector_norm",
        "var",
        "std",
        "var_mean",
        "std_mean",
        "argmax",
        "argmin",
        "any",
        "all",
        "logsumexp",
        "cumsum",
        "cumprod",
    }
)
"""Ops that read their inputs once and write a much smaller output."""

WRITE_ONLY = frozenset({"fill", "zero"})

_OUT_OPS: dict[int, str] = {
    2: "abs all any bitwise_not ceil cos erf erfc exp exp2 expm1 floor frac hardsigmoid "
    "hardswish log log1p log2 logical_not mish neg reciprocal relu round rsqrt sigmoid sign silu "
    "sin sqrt square tan tanh trunc zero",
    3: "bitwise_and bitwise_or bitwise_xor clamp_max clamp_min div eq fill fmod ge gelu gt le "
    "leaky_relu logical_and logical_or lt max maximum mean min minimum mul ne norm pow prod "
    "remainder round sigmoid_backward silu_backward sum tanh_backward bernoulli random",
    4: "_log_softmax _softmax add all amax amin any argmax argmin clamp copy cumprod cumsum div "
    "gelu_backward hardtanh lerp log_softmax logsumexp masked_fill norm rsub softmax sub "
    "threshold threshold_backward where bernoulli normal exponential random "
    "native_dropout_backward",
    5: "addcdiv addcmul elu mean nan_to_num norm prod std sum var uniform normal random",
    6: "linalg_vector_norm norm",
}
OUT_ARITY: dict[str, frozenset[int]] = {
    base: frozenset(n for n, names in _OUT_OPS.items() if base in names.split())
    for base in ELEMENTWISE | REDUCTIONS
}
"""Base name → argument counts (``len(Input Dims)``) of its ``out`` overloads whose last
argument is the one output tensor, read off the ATen schemas (``max``/``min`` with 2 are left
out: ``max(x, out=y)`` and ``max(x, y)`` look the same). A functional overload with as many
arguments never ends in a tensor, so a tensor last argument at one of these counts is ``out``."""

TWO_OUTS = frozenset(
    {("max", 5), ("min", 5), ("var_mean", 6), ("std_mean", 6), ("native_dropout", 5)}
)
"""(base, argument count) of ``out`` overloads with two output tensors (values and indices,
var and mean)."""


class Work(NamedTuple):
    """What one op call asks for; ``kind`` is ``gemm`` (FLOPs are the point) or ``memory``."""

    flops: float
    bytes: float
    dtype: str
    kind: str


def base_name(name: str) -> str:
    """``aten::mul_`` → ``mul``."""
    short = name[6:] if name.startswith("aten::") else name
    return short.rstrip("_") if short not in ("_softmax", "_log_softmax") else short


Tensor = tuple[list[int], str, int]
"""(dims, dtype, itemsize) of one tensor argument."""


def _tensor(d: Any, t: Any) -> Tensor | None:
    known = DTYPES.get(t) if isinstance(t, str) else None
    if known is None or not isinstance(d, list):
        return None
    if not all(isinstance(x, int) and x >= 0 for x in d):
        return None
    return (d, known[0], known[1])


def _tensors(args: Any) -> list[Tensor]:
    """Each tensor argument, in order; scalars and lists are left out."""
    dims = args.get("Input Dims")
    types = args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return []
    return [x for x in (_tensor(d, t) for d, t in zip(dims, types)) if x is not None]


def out_count(name: str, args: Any) -> int:
    """How many trailing arguments of this call are ``out=`` tensors (0: a functional or
    in-place call)."""
    dims = args.get("Input Dims")
    types = args.get("Input type")
    if name.endswith("_") or not isinstance(dims, list) or not isinstance(types, list):
        return 0
    base, n = base_name(name), len(types)
    k = 2 if (base, n) in TWO_OUTS else 1 if n in OUT_ARITY.get(base, ()) else 0
    if k == 0 or len(dims) != n:
        return 0
    return k if all(_tensor(d, t) is not None for d, t in zip(dims[-k:], types[-k:])) else 0


def _numel(dims: list[int]) -> int:
    return math.prod(dims) if dims else 1


def _gemm(name: str, tensors: list[Tensor]) -> Work | None:
    if name in ("aten::addmm", "aten::baddbmm"):
        bias, operands = tensors[:1], tensors[1:3]
    else:
        bias, operands = [], tensors[:2]
    if len(operands) != 2:
        return None
    (a, dtype, size), (b, _, _) = operands
    if len(a) != len(b) or len(a) not in (2, 3) or a[-1] != b[-2]:
        return None
    batch = a[0] if len(a) == 3 else 1
    m, k, n = a[-2], a[-1], b[-1]
    flops = 2.0 * batch * m * n * k
    moved = (_numel(a) + _numel(b) + batch * m * n) * size
    moved += sum(_numel(d) * s for d, _, s in bias)
    return Work(flops, float(moved), dtype, "gemm")


def _int_list(text: Any) -> list[int] | None:
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        return [int(x) for x in text.strip("[]").split(",") if x.strip()]
    except ValueError:
        return None


def _conv(args: Any, tensors: list[Tensor]) -> Work | None:
    """FLOPs of ``aten::convolution(input, weight, bias, stride, padding, dilation, transposed,
    output_padding, groups)`` from the concrete stride/padding/dilation/groups."""
    concrete = args.get("Concrete Inputs")
    if len(tensors) < 2 or not isinstance(concrete, list) or len(concrete) < 9:
        return None
    (x, dtype, size), (w, _, _) = tensors[0], tensors[1]
    stride, padding, dilation = (_int_list(concrete[i]) for i in (3, 4, 5))
    if concrete[6] not in ("False", "0") or stride is None or padding is None or dilation is None:
        return None  # transposed convolutions: left out rather than guessed
    spatial = len(x) - 2
    if spatial < 1 or len(w) != len(x) or min(len(stride), len(padding), len(dilation)) < spatial:
        return None
    out_spatial = [
        (x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) // stride[i] + 1
        for i in range(spatial)
    ]
    if min(out_spatial) <= 0:
        return None
    out_numel = x[0] * w[0] * _numel(out_spatial)
    flops = 2.0 * out_numel * _numel(w[1:])
    moved = (_numel(x) + _numel(w) + out_numel) * size
    return Work(flops, float(moved), dtype, "gemm")


def _memory(name: str, tensors: list[Tensor], outs: int) -> Work | None:
    if len(tensors) <= outs or all(not d for d, _, _ in tensors):
        return None  # 0-dim only (a Python scalar's copy_): a few bytes, the time is dispatch
    base = base_name(name)
    if outs:
        tensors, written = tensors[:-outs], tensors[-outs:]
        read = sum(_numel(d) * s for d, _, s in tensors)
        dims, dtype, size = written[0]
        if base in REDUCTIONS:  # as the functional call: the (small) output is not counted
            return Work(float(_numel(tensors[0][0])), float(read), dtype, "memory")
        wrote = sum(_numel(d) * s for d, _, s in written)
        moved = wrote if base in WRITE_ONLY else read + wrote
        return Work(float(_numel(dims)), float(moved), dtype, "memory")
    read = sum(_numel(d) * s for d, _, s in tensors)
    first_dims, dtype, size = tensors[0]
    first = _numel(first_dims) * size
    if base in REDUCTIONS:
        return Work(float(_numel(first_dims)), float(read), dtype, "memory")
    if base in WRITE_ONLY:
        return Work(float(_numel(first_dims)), float(first), dtype, "memory")
    if name.endswith("_"):
        # In place: self is written back (copy_ reads only its source, then writes self).
        moved = read if base == "copy" else read + first
        return Work(float(_numel(first_dims)), float(moved), dtype, "memory")
    shape = _broadcast([d for d, _, _ in tensors])
    out = _numel(shape) if shape is not None else _numel(first_dims)
    return Work(float(out), float(read + out * size), dtype, "memory")


def _broadcast(shapes: list[list[int]]) -> list[int] | None:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    return None
                out[i] = d
    return out


def has_work(name: str) -> bool:
    """Whether ``op_work`` can know the work of an op of this name (a check on the name
    alone, so callers can skip the other ops without reading their arguments)."""
    return name in GEMM_OPS or name in CONV_OPS or is_memory_op(name)


def is_memory_op(name: str) -> bool:
    """An elementwise, random-number or reduction op (its time is bytes moved)."""
    base = base_name(name)
    return name.startswith("aten::") and (base in ELEMENTWISE or base in REDUCTIONS)


def op_work(name: str, args: Any) -> Work | None:
    """FLOPs and bytes of one op call, or None when its kind or shapes are unknown."""
    if not isinstance(args, Mapping):
        return None
    if name in GEMM_OPS:
        return _gemm(name, _tensors(args))
    if name in CONV_OPS:
        return _conv(args, _tensors(args))
    base = base_name(name)
    if name.startswith("aten::") and (base in ELEMENTWISE or base in REDUCTIONS):
        return _memory(name, _tensors(args), out_count(name, args))
    return None
