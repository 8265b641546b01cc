"""The optional C part of the analysis (``_native``: ``_native.c`` and the files it names).

``native`` is the extension module, or ``None`` where it was not built (pip found no C
compiler) or ``TORCHSCOPE_NO_NATIVE`` is set: every caller then runs the Python twin of the
stage, which gives the same result (parity tests hold each pair equal), only slower.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import ModuleType

native: ModuleType | None = None
if not os.environ.get("TORCHSCOPE_NO_NATIVE"):
    try:
        from . import _native
    except ImportError:  # not built: the Python twins run
        pass
    else:
        Mapping.register(_native.Args)  # an event's args, read like the dict it decodes to
        native = _native
