"""Every renderer of torchscope's results, one per output, called by every face (the CLI, the
language server, the MCP server): the terminal text (``text``), the editor's Markdown
(``lines``, ``hovers``, ``memory``, ``compare``, ``sweep``, ``ranks``), the MCP summary
(``mcp_summary``) and the sweep's SVG chart (``sweep_chart``). Per-line output is drawn once,
in ``lines``.

The result types are built by the analysis stages, so they live below this package, in
``torchscope.analysis.results``; they are re-exported here so a face imports the results and
their words from one place::

    from torchscope.report import Report, render_report

This package imports ``torchscope.analysis``; ``analysis`` never imports it.
"""

from __future__ import annotations

from torchscope.analysis.results import (
    Device,
    Finding,
    Gap,
    KernelStat,
    Measurements,
    Peaks,
    Report,
    StepMetrics,
    Timing,
    TopOp,
    Verdict,
)
from torchscope.report.lines import LineRow, line_rows, source_with_margin
from torchscope.report.text import render_report

__all__ = [
    "Device",
    "Finding",
    "Gap",
    "KernelStat",
    "LineRow",
    "Measurements",
    "Peaks",
    "Report",
    "StepMetrics",
    "Timing",
    "TopOp",
    "Verdict",
    "line_rows",
    "render_report",
    "source_with_margin",
]
