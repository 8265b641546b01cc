"""One pass over memory: the bytes an elementwise, random-number or reduction op moves.

Inputs are read, the output is written (out-of-place ops), ``self`` is written back (in-place
ops), and one FLOP per element is counted (enough for the arithmetic intensity, which for these
ops is far below any ridge point). An ``out=`` call (``torch.mul(x, 0.5, out=y)``) records its
output as one more trailing argument; it is written, not read (``OUT_ARITY`` tells the ``out``
overloads apart).
"""

from __future__ import annotations

from typing import Any

from .cost import Work, work
from .tensors import Tensor, base_name, broadcast, numel, tensor, tensors

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
for _n, _names in {
    2: "rand randn randperm",
    3: "_adaptive_avg_pool2d _adaptive_avg_pool3d adaptive_avg_pool1d adaptive_avg_pool2d "
    "adaptive_avg_pool3d rand rand_like randint randn randn_like randperm",
    4: "geometric rand_like randint randint_like randn_like",
    5: "_log_softmax_backward_data _softmax_backward_data cauchy log_normal multinomial randint "
    "randint_like",
    6: "randint_like",
    7: "avg_pool1d mkldnn_max_pool2d",
    8: "avg_pool2d avg_pool3d",
}.items():  # random-number factories and pooling
    _OUT_OPS[_n] = f"{_OUT_OPS.get(_n, '')} {_names}"
OUT_ARITY: dict[str, frozenset[int]] = {
    base: frozenset(n for n, names in _OUT_OPS.items() if base in names.split())
    for base in {b for names in _OUT_OPS.values() for b in names.split()}
}
"""Base name → argument counts (``len(Input Dims)``) of its ``out`` overloads whose last
argument is the one output tensor, read off the ATen schemas (``max``/``min`` with 2 are left
out: ``max(x, out=y)`` and ``max(x, y)`` look the same). A functional overload with as many
arguments never ends in a tensor, so a tensor last argument at one of these counts is ``out``."""

TWO_OUTS = frozenset(
    {
        ("max", 5),
        ("min", 5),
        ("var_mean", 6),
        ("std_mean", 6),
        ("native_dropout", 5),
        ("adaptive_max_pool2d", 4),
        ("max_pool2d_with_indices", 8),
        ("max_pool3d_with_indices", 8),
    }
)
"""(base, argument count) of ``out`` overloads with two output tensors (values and indices,
var and mean)."""


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
    return k if all(tensor(d, t) is not None for d, t in zip(dims[-k:], types[-k:])) else 0


def _with_out(ts: list[Tensor], outs: int, reduction: bool, op_class: str, base: str) -> Work:
    ts, written = ts[:-outs], ts[-outs:]
    read = sum(numel(d) * s for d, _, s in ts)
    dims, dtype, _ = written[0]
    if reduction:  # as the functional call: the (small) output is not counted
        return work(numel(ts[0][0]), read, dtype, op_class)
    wrote = sum(numel(d) * s for d, _, s in written)
    moved = wrote if base in WRITE_ONLY else read + wrote
    return work(numel(dims), moved, dtype, op_class)


def one_pass(name: str, args: Any, op_class: str, reduction: bool = False) -> Work | None:
    """FLOPs (one per element) and bytes of one pass over the op's tensors (None: 0-dim only,
    a Python scalar's ``copy_``: a few bytes, the time is dispatch)."""
    ts, outs = tensors(args), out_count(name, args)
    if len(ts) <= outs or all(not d for d, _, _ in ts):
        return None
    base = base_name(name)
    if outs:
        return _with_out(ts, outs, reduction, op_class, base)
    read = sum(numel(d) * s for d, _, s in ts)
    first_dims, dtype, size = ts[0]
    first = numel(first_dims) * size
    if reduction:
        return work(numel(first_dims), read, dtype, op_class)
    if base in WRITE_ONLY:
        return work(numel(first_dims), first, dtype, op_class)
    if name.endswith("_"):
        # In place: self is written back (copy_ reads only its source, then writes self).
        return work(numel(first_dims), read if base == "copy" else read + first, dtype, op_class)
    shape = broadcast([d for d, _, _ in ts])
    out = numel(shape) if shape is not None else numel(first_dims)
    return work(out, read + out * size, dtype, op_class)
