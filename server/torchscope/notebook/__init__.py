"""torchscope in a notebook (or any Python process): ``profile`` runs the worker's passes on
the caller's own function and tensors and returns a ``ProfileReport`` with a rich display;
``magics`` is the IPython extension (``%load_ext torchscope``: ``%torchscope``,
``%%torchscope``). Imports torch (the worker's passes); never pygls.
"""

from __future__ import annotations

from torchscope.notebook.api import ProfileError, profile, profile_call, profile_with
from torchscope.notebook.result import ProfileReport

__all__ = ["ProfileError", "ProfileReport", "profile", "profile_call", "profile_with"]
