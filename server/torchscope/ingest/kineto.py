"""The Kineto event model, as data: which events a trace holds, and where each one goes.

Both readers (``fast.py`` in C, ``reference.py`` in Python) read these tables; the C scanner
gets them once, at import (``accel.configure``), so neither reader names a category, a
kind or an ``args`` key of its own. Every trace variant torch has written since 1.8 folds
into one shape here:

- legacy 2021 categories (``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``) map
  to today's; legacy ``Operator`` events that are really ``record_function`` annotations
  (``ProfilerStep#N``, ``enumerate(DataLoader)…``, ``Optimizer.step#…``, ``## … ##``) become
  annotations, because that is what newer torch calls them;
- the worker's per-line markers (``torchscope:L<line>``) are ``cpu_op`` events but
  annotations;
- CUPTI's own overhead is filed apart, by category or by name.

How to add a category with a kind of its own, or an ``args`` key read at load: see
"How to add …" in ``docs/design-notes.md`` (this module and ``model.py``, no C file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .model import MemoryEvent, Span, Trace

KINDS = (
    "ops",
    "annotations",
    "python",
    "runtime",
    "kernels",
    "memcpys",
    "memsets",
    "gpu_annotations",
    "gpu_syncs",
    "profiler_ranges",
    "overhead",
    "trace_spans",
)
"""The kinds of span, each the name of the :class:`~.model.Trace` list that holds them."""

CATEGORIES: Mapping[str, str] = {
    "cpu_op": "ops",
    "Operator": "ops",  # legacy; annotations are split off by name (ANNOTATION_PREFIXES)
    "operator": "ops",
    "user_annotation": "annotations",
    "python_function": "python",
    "cuda_runtime": "runtime",
    "Runtime": "runtime",
    "runtime": "runtime",
    "cuda_driver": "runtime",  # cuLaunchKernel (Triton, some cuBLAS paths)
    "xpu_runtime": "runtime",
    "privateuse1_runtime": "runtime",
    "kernel": "kernels",
    "Kernel": "kernels",
    "gpu_memcpy": "memcpys",
    "Memcpy": "memcpys",
    "gpu_memset": "memsets",
    "Memset": "memsets",
    "gpu_user_annotation": "gpu_annotations",
    "cuda_sync": "gpu_syncs",
    "cuda_profiler_range": "profiler_ranges",
    "overhead": "overhead",
    "Overhead": "overhead",
    "Trace": "trace_spans",
}
"""Event category (``cat``) → kind. Events of any other category are not read."""

DEVICE_KINDS = frozenset(
    {"kernels", "memcpys", "memsets", "gpu_annotations", "gpu_syncs", "profiler_ranges"}
)
"""Kinds recorded on a device stream (their track is a device and a stream, not a thread)."""

LEGACY_CATEGORIES = frozenset({"Operator", "Runtime", "Kernel", "Memcpy", "Memset"})

ANNOTATION_PREFIXES = (
    "ProfilerStep#",
    "enumerate(DataLoader)",
    "Optimizer.",
    "## ",
    "torchscope:",
    "[param|",
    "nccl:",
)
"""Names that ``record_function`` produced and legacy traces filed under ``Operator``."""

LINE_MARKER_PREFIX = "torchscope:L"
"""The worker's per-line markers; recorded as ``cpu_op`` but annotations, not ops. Equal to
``protocol.LINE_MARKER_PREFIX`` (the analysis imports nothing of ours; a test holds them equal)."""

PROFILER_OVERHEAD_NAMES = frozenset(
    {
        "Activity Buffer Request",
        "CUPTI Overhead",
        "Buffer Request",
        "Buffer Flush",
        "Command Buffer Full",
        "UVM Activity Init",
    }
)
"""CUPTI overhead kinds (``CUpti_ActivityOverheadKind``) Kineto exports under category
``overhead``; matched by name too, in case a version files them elsewhere."""

SPAN_ARG_KEYS = ("correlation",)
"""``args`` keys read while loading, into the :class:`~.model.Span` fields of the same order
after ``args`` (linking 60k launches to their kernels reads ``correlation`` once per span)."""

TRACK_ARG_KEYS = ("device", "stream")
"""``args`` keys of a device track's first span that name its device and stream."""


@dataclass(frozen=True)
class EventModel:
    """The tables above, bundled: what both readers are given."""

    kinds: tuple[str, ...] = KINDS
    categories: Mapping[str, str] = field(default_factory=lambda: CATEGORIES)
    device_kinds: frozenset[str] = DEVICE_KINDS
    legacy_categories: frozenset[str] = LEGACY_CATEGORIES
    annotation_prefixes: tuple[str, ...] = ANNOTATION_PREFIXES
    line_marker_prefix: str = LINE_MARKER_PREFIX
    overhead_names: frozenset[str] = PROFILER_OVERHEAD_NAMES
    span_keys: tuple[str, ...] = SPAN_ARG_KEYS
    track_keys: tuple[str, ...] = TRACK_ARG_KEYS
    span_type: type[Any] = Span
    trace_type: type[Trace] = Trace
    memory_type: type[Any] = MemoryEvent

    def kind(self, name: str) -> int:
        """The index of the kind ``name`` (its list in a sink)."""
        return self.kinds.index(name)

    def category_kinds(self) -> dict[str, int]:
        """Category → kind index."""
        return {cat: self.kinds.index(kind) for cat, kind in self.categories.items()}

    def device_kind_indices(self) -> frozenset[int]:
        return frozenset(self.kinds.index(k) for k in self.device_kinds)


KINETO = EventModel()
"""The model of every trace torch writes."""
