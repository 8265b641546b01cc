"""Shared by the rule tests on hand-built traces (``test_analysis_rules*.py``)."""

from __future__ import annotations

from pathlib import Path

from torchscope.analysis import Finding, Measurements, Report, analyze_trace

from .conftest import KinetoBuilder

NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def run(b: KinetoBuilder, tmp_path: Path, m: Measurements | None = None) -> Report:
    return analyze_trace(b.write(tmp_path / "t.json"), m)


def rules(report: Report) -> list[str]:
    return [f.rule for f in report.findings]


def only(report: Report, rule: str) -> Finding:
    found = [f for f in report.findings if f.rule == rule]
    assert len(found) == 1, (rule, report.findings)
    return found[0]
