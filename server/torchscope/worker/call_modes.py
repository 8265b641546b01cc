"""The mode of one call of a ``torchscope run`` target: is it a training call or an
evaluation call, and who made it (``run.calls``, ``--mode train|eval|any``).

``training`` is the module's ``.training`` for a method of an ``nn.Module`` (its first
argument), None otherwise; ``grad_enabled`` is ``torch.is_grad_enabled()`` at the call. A
``train`` call has grad enabled and, for a module, ``training`` true; ``eval`` is any other.
The caller is the nearest frame outside torch, torchscope, the interpreter's bootstrap
(``runpy``, ``<string>``) and the target's own file (a layer's ``forward`` is called by its
model's: the caller that tells an evaluation from a training step is further up), named
``estimate_loss (train.py:214)``; a script whose own top level calls the target is named
``<module> (train.py:34)``.
"""

from __future__ import annotations

import runpy
import types
from pathlib import Path
from typing import Any, Optional

from torchscope.protocol import RUN_MODES, is_train_call

__all__ = ["BOOTSTRAP", "RUN_MODES", "call_mode", "call_shapes", "caller_of", "selected"]

#: Frames that are never a caller: the interpreter's bootstrap (``python -c``'s ``<string>``,
#: ``<frozen runpy>``) and ``runpy`` (``python -m``, ``runpy.run_path``).
BOOTSTRAP = ("<", str(Path(runpy.__file__).resolve().parent / "runpy.py"), runpy.__file__)


def call_mode(qualname: str, args: tuple[Any, ...]) -> tuple[Optional[bool], bool]:
    """(``training``, ``grad_enabled``) of a call of ``qualname`` with ``args``."""
    import torch

    training: Optional[bool] = None
    if "." in qualname and args and isinstance(args[0], torch.nn.Module):
        training = bool(args[0].training)
    return training, bool(torch.is_grad_enabled())


def call_shapes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The shapes of a call's tensor arguments (one level into tuples, lists and dicts):
    ``[16, 1, 28, 28] [16]``; "" when it has none."""
    import torch

    found: list[str] = []
    for value in [*args, *kwargs.values()]:
        if isinstance(value, dict):
            value = list(value.values())
        for each in value if isinstance(value, (tuple, list)) else [value]:
            if isinstance(each, torch.Tensor):
                found.append(str(list(each.shape)))
    return " ".join(found)


def selected(mode: str, training: Optional[bool], grad_enabled: bool) -> bool:
    """Does a call in this mode count for ``--mode`` ``mode``?"""
    if mode == "any":
        return True
    return is_train_call(training, grad_enabled) == (mode == "train")


def caller_of(frame: Optional[types.FrameType], skipped: tuple[str, ...], own_file: str) -> str:
    """``function (file.py:line)`` of the nearest frame outside ``skipped`` folders and the
    target's file (the nearest outside ``skipped`` when all are in it)."""
    nearest: Optional[types.FrameType] = None
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(skipped):
            nearest = nearest or frame
            if str(Path(name).resolve()) != own_file:
                break
        frame = frame.f_back
    found = frame or nearest
    if found is None:
        return "?"
    code = found.f_code
    function = str(getattr(code, "co_qualname", code.co_name))
    if ".<locals>.<" in function:  # a comprehension or lambda: its function's name
        function = function.split(".<locals>.<", 1)[0]
    return f"{function} ({Path(code.co_filename).name}:{found.f_lineno})"
