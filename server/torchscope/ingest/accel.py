"""The one boundary of the C part (``_native``: ``_native.c`` and the files it names): the
one module that imports it.

``native`` is the extension module, or ``None`` where it was not built (pip found no C
compiler) or ``TORCHSCOPE_NO_NATIVE`` is set: then the reference reader reads every trace,
and the analysis runs each stage's Python twin, which gives the same result (parity tests
hold each pair equal), only slower. :func:`configure` hands the C scanner the event model's
tables (``kineto.py``): once at import, again only for another model (a test's).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from .kineto import KINETO, SPAN_ARG_KEYS, EventModel
from .model import MemoryEvent, Span
from .text import clean, has_surrogate

native: ModuleType | None = None
_configured: list[EventModel | None] = [None]
_EMPTY: dict[str, Any] = {}


#: What reading a trace costs without the C reader: docs/performance.md's measure of
#: ``bench/analyze_command.py`` (the pure-Python reader against the C one, same trace).
PURE_PYTHON_COST = "about 2.9x slower"


def reader_note() -> str | None:
    """One line for a face to say once when the C reader is not in use: why, and what it
    costs; None when it is."""
    if native is not None:
        return None
    if os.environ.get("TORCHSCOPE_NO_NATIVE"):
        why = "TORCHSCOPE_NO_NATIVE is set"
    else:
        python = f"CPython {sys.version_info[0]}.{sys.version_info[1]}"
        why = f"no build of it for {sysconfig.get_platform()}, {python} in this install"
    return (
        f"the native trace reader is not loaded ({why}): traces are read in pure Python, "
        f"{PURE_PYTHON_COST} (same results)"
    )


def json_loads(data: Any) -> Any:
    """The JSON value in ``data`` (bytes or a buffer), by stdlib ``json``: what the C part
    falls back on for a value it is not sure of, and the reference for what it reads."""
    raw = bytes(data)
    value = json.loads(raw)
    return clean(value) if has_surrogate(raw) else value


def _span_type(model: EventModel) -> type[Any]:
    """The type the C scanner makes spans of: its compact ``Span`` for the model torch writes
    (the fields of :class:`~.model.Span`), else the model's own tuple type."""
    assert native is not None
    if model.span_type is Span and model.span_keys == SPAN_ARG_KEYS:
        span: type[Any] = native.Span
        return span
    return model.span_type


def configure(model: EventModel) -> None:
    """Give the C scanner ``model``'s tables (a no-op when they are the ones it has)."""
    if native is None or _configured[0] is model:
        return
    native.configure(
        (
            model.category_kinds(),
            model.legacy_categories,
            model.annotation_prefixes,
            model.line_marker_prefix,
            model.overhead_names,
            _span_type(model),
            _EMPTY,
            native.MemoryEvent if model.memory_type is MemoryEvent else model.memory_type,
            model.kind("ops"),
            model.kind("annotations"),
            model.kind("overhead"),
            model.span_keys,
            json_loads,
        )
    )
    _configured[0] = model


if not os.environ.get("TORCHSCOPE_NO_NATIVE"):
    try:
        from . import _native
    except ImportError:  # not built: the reference reader and the Python twins run
        pass
    else:
        Mapping.register(_native.Args)  # an event's args, read like the dict it decodes to
        native = _native
        configure(KINETO)
