"""Make the prepared call run the line-marked copy of the target during the profiled pass.

The call expression may call the target directly (``fn(x)``), through a bound method
(``Model().forward(x)``), or indirectly (``model(x)`` runs ``forward``; ``main()`` calls
``fn``). The first two call the copy instead; the last patches the attribute the target lives
under (module global or class attribute) for the pass and puts it back afterwards.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable, Optional

from torchscope.worker.call_expression import PreparedCall, run_to_completion
from torchscope.worker.line_markers import InstrumentError, instrument
from torchscope.worker.loader import unwrap


@dataclass
class MarkedCall:
    """What the profiled pass runs: ``invoke`` inside ``active()``."""

    invoke: Callable[[], Any]
    owner: Any = None
    attribute: str = ""
    replacement: Any = None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        if self.owner is None:
            yield
            return
        original = (
            self.owner.__dict__[self.attribute]
            if isinstance(self.owner, type)
            else getattr(self.owner, self.attribute)
        )
        setattr(self.owner, self.attribute, self.replacement)
        try:
            yield
        finally:
            setattr(self.owner, self.attribute, original)


def _owner(module: types.ModuleType, qualname: str) -> tuple[Any, str]:
    *path, name = qualname.split(".")
    owner: Any = module
    for part in path:
        owner = getattr(owner, part)
    return owner, name


def marked_call(
    prepared: PreparedCall, module: types.ModuleType, qualname: str, target: Any
) -> tuple[Optional[MarkedCall], str]:
    """The marked call, or None with the reason line attribution is unavailable."""
    try:
        copy = instrument(target)
    except (InstrumentError, SyntaxError) as exc:
        return None, f"line attribution unavailable: {exc}"
    inner = unwrap(target)
    callee: Any = prepared.func
    args, kwargs = prepared.args, prepared.kwargs
    # A bound method first: ``inspect.unwrap`` follows a bound method's ``__wrapped__`` (the
    # attribute reads through to ``__func__``) to the bare function, which would drop the
    # receiver of a decorated method (``@torch.no_grad()``, ``functools.wraps``).
    bound_func = getattr(callee, "__func__", None)
    if bound_func is not None and unwrap(bound_func) is inner:
        bound = types.MethodType(copy, callee.__self__)
        return MarkedCall(lambda: run_to_completion(bound(*args, **kwargs))), ""
    if callee is target or unwrap(callee) is inner:
        return MarkedCall(lambda: run_to_completion(copy(*args, **kwargs))), ""
    try:
        owner, name = _owner(module, qualname)
    except AttributeError as exc:
        return None, f"line attribution unavailable: {exc}"
    replacement: Any = copy
    if isinstance(owner, type):
        raw = owner.__dict__.get(name)
        if isinstance(raw, staticmethod):
            replacement = staticmethod(copy)
        elif isinstance(raw, classmethod):
            replacement = classmethod(copy)
    return MarkedCall(prepared.invoke, owner, name, replacement), ""
