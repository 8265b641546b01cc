"""A capture replayed at another batch size (``profile --sweep batch=…``, docs/real-inputs.md).

The tensor arguments are the call's tensors, depth first, in argument order, inside lists,
tuples and dicts (modules — ``self`` with its parameters and buffers — and ``nn.Parameter``s
are not arguments here). Which of their dimensions is the batch (``batch_dimension``):

1. ``--batch-dim N`` when given;
2. else the model's own word: the first submodule of the called module (``self``, or a module
   argument) with a ``batch_first`` attribute — ``nn.LSTM``/``GRU``/``RNN``,
   ``nn.MultiheadAttention``, the ``nn.Transformer`` layers — says dim 0 when it is True and
   dim 1 when it is False (``nn.LSTM``'s default input is ``(T, B, F)``);
3. else the dimension of the first tensor argument whose size the most tensor arguments of its
   rank share there (dim 0 when it is among them: the convention; ``(T, B, F)`` with an ``h0``
   of ``(L, B, H)`` is dim 1; a ``(B, L, W)`` input with an ``(L, L)`` mask is dim 0);
4. else (a tie without dim 0) the sweep refuses, names the candidates and points to
   ``--batch-dim N``.

The captured batch size is that dimension of the first tensor argument. Every tensor argument
whose size there equals it is cut to the first ``batch`` (a smaller batch) or repeated along
it and cut (a larger one); the rest is passed as captured. A new tensor that needs a gradient
is a leaf again.
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


def _tensors(value: Any, depth: int, out: list[Any]) -> list[Any]:
    """The tensor arguments inside ``value``, depth first."""
    import torch

    if _skipped(value):
        return out
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif depth < MAX_DEPTH:
        for child in _children(value):
            _tensors(child, depth + 1, out)
    return out


def _modules(prepared: PreparedCall) -> list[Any]:
    """The called module (a bound method's ``self``) and the module arguments."""
    import torch

    owner = getattr(prepared.func, "__self__", None)
    found = [owner] if isinstance(owner, torch.nn.Module) else []
    values = (*prepared.args, *prepared.kwargs.values())
    return found + [v for v in values if isinstance(v, torch.nn.Module)]


def model_batch_dim(prepared: PreparedCall) -> Optional[tuple[int, str]]:
    """(dim, why) from the first submodule with a ``batch_first`` flag (None: no such one)."""
    for module in _modules(prepared):
        for name, sub in module.named_modules():
            flag = getattr(sub, "batch_first", None)
            if isinstance(flag, bool):
                where = name or type(sub).__name__
                return (0 if flag else 1), f"{where}.batch_first={flag}"
    return None


def agreeing(tensors: list[Any]) -> dict[int, int]:
    """Per dimension of the first tensor: how many tensor arguments of its rank have its size
    there. Only its rank: an attention's ``(L, L)`` mask beside its ``(B, L, W)`` input shares
    the sequence length at dim 1, and a count over every rank swept the sequence."""
    first = tensors[0]
    peers = [t for t in tensors if t.dim() == first.dim()]
    return {d: sum(1 for t in peers if t.shape[d] == first.shape[d]) for d in range(first.dim())}


def batch_dimension(
    prepared: PreparedCall, tensors: list[Any], asked: Optional[int], qualname: str
) -> tuple[int, str]:
    """(the batch dimension, how it was chosen); ``NoBatchDimension`` when none can be."""
    if asked is not None:
        return asked, "--batch-dim"
    from_model = model_batch_dim(prepared)
    if from_model is not None:
        return from_model
    counts = agreeing(tensors)
    most = max(counts.values())
    best = [d for d, n in counts.items() if n == most]
    peers = sum(1 for t in tensors if t.dim() == tensors[0].dim())
    of = f"{most} of {peers} tensor arguments of its rank"
    if 0 in best:
        return 0, f"dim 0 (the convention), the size {of} share"
    if len(best) == 1:
        return best[0], f"the size {of} share there"
    shapes = ", ".join(str(tuple(t.shape)) for t in tensors[:6])
    dims = ", ".join(f"dim {d} ({int(tensors[0].shape[d])})" for d in best)
    raise NoBatchDimension(
        f"which dimension of the captured call of {qualname} is the batch? Its tensor "
        f"arguments are {shapes}; {dims} fit equally, and no submodule says batch_first — "
        "pass --batch-dim N"
    )


def _resized(tensor: Any, old: int, new: int, dim: int) -> Any:
    import torch

    if tensor.layout != torch.strided:  # sparse and the like: as captured
        return tensor
    with torch.no_grad():
        if new <= old:
            out = tensor.narrow(dim, 0, new).clone()
        else:
            times = [1] * tensor.dim()
            times[dim] = -(-new // old)
            out = tensor.repeat(*times).narrow(dim, 0, new).contiguous()
    return out.requires_grad_(tensor.requires_grad)


def _resize(value: Any, old: int, new: int, depth: int, dim: int) -> Any:
    import torch

    if _skipped(value):
        return value
    if isinstance(value, torch.Tensor):
        matches = value.dim() > dim and int(value.shape[dim]) == old
        return _resized(value, old, new, dim) if matches else value
    if depth >= MAX_DEPTH or not isinstance(value, (list, tuple, dict)):
        return value
    if isinstance(value, dict):
        out = copy.copy(value)  # keeps the mapping's own type (OrderedDict, …)
        for key, child in value.items():
            out[key] = _resize(child, old, new, depth + 1, dim)
        return out
    items = [_resize(child, old, new, depth + 1, dim) for child in value]
    if isinstance(value, list):
        return items if type(value) is list else type(value)(items)
    if hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*items)
    try:
        return type(value)(items)
    except TypeError:
        return tuple(items)


def at_batch(
    prepared: PreparedCall, batch: Optional[int], qualname: str, asked: Optional[int] = None
) -> tuple[PreparedCall, int, int, str]:
    """``prepared`` (a loaded capture) at ``batch`` (None: as captured) with ``asked`` the
    batch dimension (None: ``batch_dimension`` chooses): the call, the captured batch size,
    the dimension and how it was chosen; ``NoBatchDimension`` when there is none to sweep."""
    tensors = [t for v in (*prepared.args, *prepared.kwargs.values()) for t in _tensors(v, 0, [])]
    tensors = [t for t in tensors if t.dim() >= 1]
    if not tensors:
        raise NoBatchDimension(
            f"no tensor argument of the captured call of {qualname} has a batch dimension "
            "to sweep — sweep a call expression with a placeholder instead: "
            f"--call '{qualname.rsplit('.', 1)[-1]}(torch.randn({{N}}, …))' --sweep N=…"
        )
    dim, why = batch_dimension(prepared, tensors, asked, qualname)
    if tensors[0].dim() <= dim or int(tensors[0].shape[dim]) == 0:
        raise NoBatchDimension(
            f"the first tensor argument of the captured call of {qualname} has shape "
            f"{tuple(tensors[0].shape)}: no dim {dim} to sweep ({why}) — pass --batch-dim N"
        )
    old = int(tensors[0].shape[dim])
    if batch is None or batch == old:
        return prepared, old, dim, why
    args = tuple(_resize(a, old, batch, 0, dim) for a in prepared.args)
    kwargs = {k: _resize(v, old, batch, 0, dim) for k, v in prepared.kwargs.items()}
    name = prepared.source.replace("(<captured inputs>)", f"(<captured inputs at batch {batch}>)")
    return PreparedCall(prepared.func, args, kwargs, name), old, dim, why
