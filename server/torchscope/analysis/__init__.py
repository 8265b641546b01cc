"""torchscope's trace analysis over an exported Kineto trace: Python, with its per-event
stages in the optional C extension behind ``ingest/accel.py``, each with a Python twin. The
trace is ``torchscope.ingest``'s (``load_trace`` and ``Trace`` are re-exported here).

Imports neither torch nor pygls nor msgpack, so it runs on any trace from any machine and
the language server can import it in milliseconds. Public API::

    report = analyze_trace("run.json.gz", measurements)   # -> Report
    to_builtins(report)                                    # JSON-ready (protocol)

Its words (the text report, the editor's Markdown, the charts) are ``torchscope.report``'s, a
package above this one: nothing here imports it. The analyses over several traces are in
``multi/``.

This module is the analysis's face: code outside ``analysis/`` imports this package,
``engine``, ``results`` and ``formatting``, never a stage (``index/``, ``measure/``,
``verdict/``, ``rules/``, ``multi/``). What it needs from a stage is re-exported here, lazily
(``_LAZY``, PEP 562), so ``import torchscope.analysis`` loads neither the rank pool nor Dask
nor the comparison of two runs until a name of theirs is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from .index.columns import median
    from .measure.lines import DEFAULT_HOT_SHARE
    from .measure.machine import LocalMachine
    from .measure.parts import CalleeStats, CompiledOnLine, LineOp, LineStats
    from .measure.roofline import achieved_text, peaks_text
    from .multi.ab import ABRounds, compare_rounds, comparison_of
    from .multi.compare import compare_runs
    from .multi.comparison import CompareSide, Comparison, CompileMeta
    from .multi.compiled_lines import CompiledLine, CompiledLines, KernelLines
    from .multi.diff import Diff, DiffSide, DiffVerdict, diff_runs
    from .multi.diff import decide as decide_diff
    from .multi.interval import CONFIDENCE, ratio_interval, undecided
    from .multi.inventory import Inventory, inventory
    from .multi.rank_cluster import ClusterError, analyze_ranks_on
    from .multi.rank_cluster import connect as connect_cluster
    from .multi.rank_model import RankSummary
    from .multi.ranks import RankColumns, RanksReport, analyze_ranks, rank_paths
    from .multi.sweep import (
        COMPUTE_SHARE_CROSSOVER,
        Sweep,
        SweepPoint,
        SweepStep,
        crossover,
        failed_point,
        past_overhead,
        point_from_report,
        sweep_step,
    )
    from .verdict.consistency import SELF_CHECK
    from .verdict.sweep_check import self_check_sweep, sweep_problems

#: Name here -> (its module, relative to this package; its name there), imported on first use.
#: Keep in step with the ``TYPE_CHECKING`` imports above (``tests/unit/test_layers.py``).
_LAZY: dict[str, tuple[str, str]] = {
    "median": (".index.columns", "median"),
    "SELF_CHECK": (".verdict.consistency", "SELF_CHECK"),
    "self_check_sweep": (".verdict.sweep_check", "self_check_sweep"),
    "sweep_problems": (".verdict.sweep_check", "sweep_problems"),
    "DEFAULT_HOT_SHARE": (".measure.lines", "DEFAULT_HOT_SHARE"),
    "LocalMachine": (".measure.machine", "LocalMachine"),
    "CalleeStats": (".measure.parts", "CalleeStats"),
    "CompiledOnLine": (".measure.parts", "CompiledOnLine"),
    "LineOp": (".measure.parts", "LineOp"),
    "LineStats": (".measure.parts", "LineStats"),
    "achieved_text": (".measure.roofline", "achieved_text"),
    "peaks_text": (".measure.roofline", "peaks_text"),
    "ABRounds": (".multi.ab", "ABRounds"),
    "compare_rounds": (".multi.ab", "compare_rounds"),
    "comparison_of": (".multi.ab", "comparison_of"),
    "compare_runs": (".multi.compare", "compare_runs"),
    "CompareSide": (".multi.comparison", "CompareSide"),
    "Comparison": (".multi.comparison", "Comparison"),
    "CompileMeta": (".multi.comparison", "CompileMeta"),
    "CompiledLine": (".multi.compiled_lines", "CompiledLine"),
    "CompiledLines": (".multi.compiled_lines", "CompiledLines"),
    "KernelLines": (".multi.compiled_lines", "KernelLines"),
    "Diff": (".multi.diff", "Diff"),
    "DiffSide": (".multi.diff", "DiffSide"),
    "DiffVerdict": (".multi.diff", "DiffVerdict"),
    "decide_diff": (".multi.diff", "decide"),
    "diff_runs": (".multi.diff", "diff_runs"),
    "CONFIDENCE": (".multi.interval", "CONFIDENCE"),
    "ratio_interval": (".multi.interval", "ratio_interval"),
    "undecided": (".multi.interval", "undecided"),
    "Inventory": (".multi.inventory", "Inventory"),
    "inventory": (".multi.inventory", "inventory"),
    "ClusterError": (".multi.rank_cluster", "ClusterError"),
    "analyze_ranks_on": (".multi.rank_cluster", "analyze_ranks_on"),
    "connect_cluster": (".multi.rank_cluster", "connect"),
    "RankSummary": (".multi.rank_model", "RankSummary"),
    "RankColumns": (".multi.ranks", "RankColumns"),
    "RanksReport": (".multi.ranks", "RanksReport"),
    "analyze_ranks": (".multi.ranks", "analyze_ranks"),
    "rank_paths": (".multi.ranks", "rank_paths"),
    "COMPUTE_SHARE_CROSSOVER": (".multi.sweep", "COMPUTE_SHARE_CROSSOVER"),
    "Sweep": (".multi.sweep", "Sweep"),
    "SweepPoint": (".multi.sweep", "SweepPoint"),
    "SweepStep": (".multi.sweep", "SweepStep"),
    "crossover": (".multi.sweep", "crossover"),
    "failed_point": (".multi.sweep", "failed_point"),
    "past_overhead": (".multi.sweep", "past_overhead"),
    "point_from_report": (".multi.sweep", "point_from_report"),
    "sweep_step": (".multi.sweep", "sweep_step"),
}


def __getattr__(name: str) -> object:
    """A name of ``_LAZY``, imported from its stage on first use and kept here after."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "ALL_RULES",
    "COMPUTE_SHARE_CROSSOVER",
    "CONFIDENCE",
    "DEFAULT_HOT_SHARE",
    "SELF_CHECK",
    "ABRounds",
    "CalleeStats",
    "ClusterError",
    "CompareSide",
    "Comparison",
    "CompileMeta",
    "CompiledLine",
    "CompiledLines",
    "CompiledOnLine",
    "Device",
    "Diff",
    "DiffSide",
    "DiffVerdict",
    "Finding",
    "Gap",
    "Inventory",
    "KernelLines",
    "KernelStat",
    "LineOp",
    "LineStats",
    "LocalMachine",
    "Measurements",
    "RankColumns",
    "RankSummary",
    "RanksReport",
    "Report",
    "StepMetrics",
    "Sweep",
    "SweepPoint",
    "SweepStep",
    "Timing",
    "TopOp",
    "Trace",
    "TraceError",
    "Verdict",
    "achieved_text",
    "analyze",
    "analyze_ranks",
    "analyze_ranks_on",
    "analyze_trace",
    "compare_rounds",
    "compare_runs",
    "comparison_of",
    "connect_cluster",
    "crossover",
    "decide_diff",
    "diff_runs",
    "failed_point",
    "format_bytes",
    "format_duration",
    "format_share",
    "inventory",
    "load_trace",
    "median",
    "past_overhead",
    "peaks_text",
    "point_from_report",
    "rank_paths",
    "ratio_interval",
    "self_check_sweep",
    "sweep_problems",
    "sweep_step",
    "undecided",
]
