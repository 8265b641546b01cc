"""torchscope: why is this PyTorch function slow? torch.profiler findings where the code is written.

Kept light on purpose: the worker imports this package inside the user's interpreter and must
not pull in the daemon's dependencies (pygls), and the daemon must not pull in torch. So
``torchscope.profile`` (the in-process API, ``notebook/``) is imported on first use, and the
IPython extension (``%load_ext torchscope``) imports IPython only when IPython loads it.
"""

from __future__ import annotations

from typing import Any

from torchscope._version import __version__

__all__ = ["__version__", "load_ipython_extension"]

_LAZY = {"profile": "profile", "profile_with": "profile_with", "Report": "ProfileReport"}


def __getattr__(name: str) -> Any:
    """``torchscope.profile``, ``torchscope.profile_with`` and ``torchscope.Report``, imported
    on first use (they import torch)."""
    if name in _LAZY:
        from torchscope import notebook

        return getattr(notebook, _LAZY[name])
    raise AttributeError(f"module 'torchscope' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext torchscope``: registers ``%torchscope`` and ``%%torchscope``."""
    from torchscope.notebook.magics import load

    load(ipython)
