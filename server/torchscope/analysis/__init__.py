"""torchscope's trace analysis over an exported Kineto trace: Python, with its per-event
stages in the optional C extension behind ``ingest/accel.py``, each with a Python twin. The
trace is ``torchscope.ingest``'s (``load_trace`` and ``Trace`` are re-exported here).

Imports neither torch nor pygls nor msgpack, so it runs on any trace from any machine and
the language server can import it in milliseconds. Public API::

    report = analyze_trace("run.json.gz", measurements)   # -> Report
    report.to_dict()                                       # JSON-ready

Its words (the text report, the editor's Markdown, the charts) are ``torchscope.report``'s, a
package above this one: nothing here imports it. The analyses over several traces are in
``multi/``.
"""

from __future__ import annotations

from ..ingest import Trace, TraceError, load_trace
from .engine import ALL_RULES, analyze, analyze_trace
from .formatting import format_bytes, format_duration, format_share
from .results import (
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
]
