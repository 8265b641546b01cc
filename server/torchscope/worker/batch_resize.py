"""A capture replayed at another batch size (``profile --sweep batch=…``, docs/real-inputs.md).

The captured batch size is dim 0 of the call's first tensor argument (depth first, in argument
order, inside lists, tuples and dicts; modules — ``self`` with its parameters and buffers — and
``nn.Parameter``s are not arguments here). Every tensor argument whose dim 0 equals it is cut
to the first ``batch`` rows (a smaller batch) or repeated along dim 0 and cut (a larger one);
the rest is passed as captured. A new tensor that needs a gradient is a leaf again.
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from torchscope.worker.call_expression import PreparedCall

#: Containers deeper than this are passed as captured (and searched no further).
MAX_DEPTH = 8


class NoBatchDimension(Exception):
    """No tensor argument has a dim 0 to sweep."""


def _skipped(value: Any) -> bool:
    import torch

    return isinstance(value, (torch.nn.Module, torch.nn.Parameter))


def _children(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    return []


def _first_batch(value: Any, depth: int) -> Optional[int]:
    import torch

    if _skipped(value):
        return None
    if isinstance(value, torch.Tensor):
        return int(value.shape[0]) if value.dim() >= 1 else None
    if depth >= MAX_DEPTH:
        return None
    for child in _children(value):
        found = _first_batch(child, depth + 1)
        if found is not None:
            return found
    return None


def captured_batch(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Optional[int]:
    """Dim 0 of the first tensor argument, None when no argument is a tensor with a dim 0."""
    for value in (*args, *kwargs.values()):
        found = _first_batch(value, 0)
        if found is not None:
            return found
    return None


def _resized(tensor: Any, old: int, new: int) -> Any:
    import torch

    if tensor.layout != torch.strided:  # sparse and the like: as captured
        return tensor
    with torch.no_grad():
        if new <= old:
            out = tensor[:new].clone()
        else:
            times = -(-new // old)
            out = tensor.repeat(times, *([1] * (tensor.dim() - 1)))[:new].contiguous()
    return out.requires_grad_(tensor.requires_grad)


def _resize(value: Any, old: int, new: int, depth: int) -> Any:
    import torch

    if _skipped(value):
        return value
    if isinstance(value, torch.Tensor):
        matches = value.dim() >= 1 and int(value.shape[0]) == old
        return _resized(value, old, new) if matches else value
    if depth >= MAX_DEPTH or not isinstance(value, (list, tuple, dict)):
        return value
    if isinstance(value, dict):
        out = copy.copy(value)  # keeps the mapping's own type (OrderedDict, …)
        for key, child in value.items():
            out[key] = _resize(child, old, new, depth + 1)
        return out
    items = [_resize(child, old, new, depth + 1) for child in value]
    if isinstance(value, list):
        return items if type(value) is list else type(value)(items)
    if hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*items)
    try:
        return type(value)(items)
    except TypeError:
        return tuple(items)


def at_batch(
    prepared: PreparedCall, batch: Optional[int], qualname: str
) -> tuple[PreparedCall, int]:
    """``prepared`` (a loaded capture) at ``batch`` (None: as captured) and the captured batch
    size; ``NoBatchDimension`` when no tensor argument has a dim 0."""
    old = captured_batch(prepared.args, prepared.kwargs)
    if old is None or old == 0:
        raise NoBatchDimension(
            f"no tensor argument of the captured call of {qualname} has a batch dimension "
            "(dim 0) to sweep — sweep a call expression with a placeholder instead: "
            f"--call '{qualname.rsplit('.', 1)[-1]}(torch.randn({{N}}, …))' --sweep N=…"
        )
    if batch is None or batch == old:
        return prepared, old
    args = tuple(_resize(a, old, batch, 0) for a in prepared.args)
    kwargs = {k: _resize(v, old, batch, 0) for k, v in prepared.kwargs.items()}
    name = prepared.source.replace("(<captured inputs>)", f"(<captured inputs at batch {batch}>)")
    return PreparedCall(prepared.func, args, kwargs, name), old
