"""Two values the same? The pieces a measured fix's check (``worker/trial_check.py``) compares
with: the tensors and numbers in a returned value (``leaves``: through tuples, lists and dicts),
the leaf tensors that need a gradient a call reaches (``parameters_of``: ``nn.Module``
parameters, an optimizer's), and ``differs``: tensors compared with ``torch.allclose`` at the
tolerances of their dtype (``TOLERANCES``), NaN equal to NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

#: dtype name → (rtol, atol). Float32 is looser than ``torch.testing``'s default
#: (1.3e-6, 1e-5): a fused kernel sums in another order (SDPA vs softmax(q @ kᵀ) @ v differ by
#: ~1e-6 relative at 512 tokens), which is the point of the fix, not a changed result.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
    "float32": (1e-4, 1e-5),
    "complex64": (1e-4, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}
DEFAULT_TOLERANCE = (1e-4, 1e-5)


def leaves(value: Any, path: str, seen: set[int]) -> Iterator[tuple[str, Any]]:
    import torch

    if id(value) in seen:
        return
    if isinstance(value, (torch.Tensor, bool, int, float, complex)):
        yield path, value
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}[{key!r}]", seen)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]", seen)
    elif value is None or isinstance(value, (str, bytes)):
        yield path, value


def _parameters(value: Any, seen: set[int]) -> Iterator[Any]:
    """Leaf tensors that need a gradient, reachable from a call's receiver and arguments."""
    import torch

    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        if value.requires_grad and value.is_leaf:
            yield value
    elif isinstance(value, torch.nn.Module):
        yield from value.parameters()
    elif isinstance(value, torch.optim.Optimizer):
        for group in value.param_groups:
            yield from group["params"]
    elif isinstance(value, dict):
        for item in value.values():
            yield from _parameters(item, seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _parameters(item, seen)


def roots_of(prepared: Any) -> list[tuple[str, Any]]:
    """What a ``PreparedCall`` reaches, named: its receiver, its arguments and the module
    globals the function reads by name (a training step's model and optimizer)."""
    func = prepared.func
    roots: list[tuple[str, Any]] = [("self", getattr(func, "__self__", None))]
    roots += [(f"argument {i}", a) for i, a in enumerate(prepared.args)]
    roots += [(f"argument {k}", a) for k, a in prepared.kwargs.items()]
    code, names = getattr(func, "__code__", None), getattr(func, "__globals__", {})
    if code is not None:
        roots += [(n, names[n]) for n in code.co_names if n in names]
    return roots


def parameters_of(prepared: Any) -> list[Any]:
    """The leaf tensors of a ``PreparedCall`` whose values and gradients are compared: from
    what it reaches (``roots_of``)."""
    seen: set[int] = set()
    unique: dict[int, Any] = {}
    for _, root in roots_of(prepared):
        for tensor in _parameters(root, seen):
            unique.setdefault(id(tensor), tensor)
    return list(unique.values())


def differs(a: Any, b: Any, summed: bool = False) -> str:
    """ "" when ``a`` and ``b`` are the same within tolerance, else what differs. ``summed``
    (a gradient: a sum over the batch and every position) measures the tolerance against the
    tensor's largest magnitude rather than each element's: a convolution's weight gradient sums
    4096 products per element, and a kernel that sums in another order (channels-last) moves
    an element near zero by ~1e-4 of the largest one — the same gradient."""
    import torch

    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return f"{type(a).__name__} vs {type(b).__name__}"
    if not isinstance(a, torch.Tensor):
        if isinstance(a, (int, float, complex)) and isinstance(b, (int, float, complex)):
            rtol, atol = TOLERANCES["float32"] if isinstance(a, float) else (0.0, 0.0)
            if a == b or (a != a and b != b) or abs(a - b) <= atol + rtol * abs(b):
                return ""
            return f"{a!r} vs {b!r}"
        return "" if a == b else f"{a!r} vs {b!r}"
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} vs {b.dtype}"
    a, b = a.detach().cpu(), b.detach().cpu()
    if not (a.is_floating_point() or a.is_complex()):
        return "" if torch.equal(a, b) else "values differ"
    rtol, atol = TOLERANCES.get(str(a.dtype).replace("torch.", ""), DEFAULT_TOLERANCE)
    if torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    worst = (a.double() - b.double()).abs().nan_to_num(math.inf).max().item()
    if summed:
        largest = b.double().abs().nan_to_num(0.0).max().item() if b.numel() else 0.0
        if worst <= atol + rtol * largest:
            return ""
        return (
            f"max difference {worst:.3g} (rtol {rtol:g} of the largest {largest:.3g}, "
            f"atol {atol:g} for {a.dtype})"
        )
    return f"max difference {worst:.3g} (rtol {rtol:g}, atol {atol:g} for {a.dtype})"
