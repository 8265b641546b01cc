"""torchscope's trace analysis over an exported Kineto trace: Python, with its per-event
stages in an optional C extension (``_native``, see ``accel``) that has a Python twin each.

Imports neither torch nor pygls nor msgpack, so it runs on any trace from any machine and
the language server can import it in milliseconds. Public API::

    report = analyze_trace("run.json.gz", measurements)   # -> Report
    print(render_report(report))
    report.to_dict()                                       # JSON-ready
"""

from __future__ import annotations

from ..ingest import Trace, TraceError, load_trace
from .engine import analyze, analyze_trace
from .formatting import format_bytes, format_duration, format_share
from .render import render_report
from .report import (
    Device,
    Finding,
    Gap,
    KernelStat,
    Measurements,
    Report,
    StepMetrics,
    Timing,
    TopOp,
    Verdict,
)
from .rules import ALL_RULES

__all__ = [
    "ALL_RULES",
    "Device",
    "Finding",
    "Gap",
    "KernelStat",
    "Measurements",
    "Report",
    "StepMetrics",
    "Timing",
    "TopOp",
    "Trace",
    "TraceError",
    "Verdict",
    "analyze",
    "analyze_trace",
    "format_bytes",
    "format_duration",
    "format_share",
    "load_trace",
    "render_report",
]
