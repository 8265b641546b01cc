"""Do two versions of a function give the same result? (a measured fix's output check)

Each side is called once, after ``torch.manual_seed`` with the same seed, on inputs its own
call expression built from the same seed. Compared, in order: every tensor and number in what
they return (through tuples, lists, dicts and dataclass-like objects with ``__dict__`` left
out), then every leaf tensor that needs a gradient reachable from the call's receiver and
arguments (``nn.Module`` parameters, an optimizer's parameters) — its value (an optimizer
step changes it) and its ``.grad`` (``None`` and all zeros count as the same: ``zero_grad``
with and without ``set_to_none``). Tensors are compared with ``torch.allclose`` at the
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


def _leaves(value: Any, path: str, seen: set[int]) -> Iterator[tuple[str, Any]]:
    import torch

    if id(value) in seen:
        return
    if isinstance(value, (torch.Tensor, bool, int, float, complex)):
        yield path, value
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}[{key!r}]", seen)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]", seen)
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


def parameters_of(prepared: Any) -> list[Any]:
    """The leaf tensors of a ``PreparedCall`` whose values and gradients are compared: from
    its receiver, its arguments and the module globals the function reads by name."""
    func = prepared.func
    roots = [getattr(func, "__self__", None), *prepared.args, *prepared.kwargs.values()]
    code, names = getattr(func, "__code__", None), getattr(func, "__globals__", {})
    if code is not None:  # the module-level model and optimizer a training step reads
        roots += [names[n] for n in code.co_names if n in names]
    seen: set[int] = set()
    unique: dict[int, Any] = {}
    for root in roots:
        for tensor in _parameters(root, seen):
            unique.setdefault(id(tensor), tensor)
    return list(unique.values())


def _differs(a: Any, b: Any) -> str:
    """ "" when ``a`` and ``b`` are the same within tolerance, else what differs."""
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
    return f"max difference {worst:.3g} (rtol {rtol:g}, atol {atol:g} for {a.dtype})"


def compare(original: Any, rewrite: Any, before: list[Any], after: list[Any]) -> dict[str, Any]:
    """``{"same", "compared", "detail"}`` for two returned values and the two sides'
    parameters (``parameters_of``), in the same order."""
    import torch

    a_items = list(_leaves(original, "result", set()))
    b_items = list(_leaves(rewrite, "result", set()))
    if [p for p, _ in a_items] != [p for p, _ in b_items]:
        return {"same": False, "compared": 0, "detail": "the results have different structures"}
    pairs = [(path, a, b) for (path, a), (_, b) in zip(a_items, b_items)]
    if len(before) != len(after):
        return {"same": False, "compared": 0, "detail": "different numbers of parameters"}
    for i, (p, q) in enumerate(zip(before, after)):
        pairs.append((f"parameter {i}", p, q))
        if p.grad is not None or q.grad is not None:
            zero_p = torch.zeros_like(p) if p.grad is None else p.grad
            zero_q = torch.zeros_like(q) if q.grad is None else q.grad
            pairs.append((f"parameter {i}.grad", zero_p, zero_q))
    for path, a, b in pairs:
        detail = _differs(a, b)
        if detail:
            return {"same": False, "compared": len(pairs), "detail": f"{path}: {detail}"}
    return {"same": True, "compared": len(pairs), "detail": ""}
