"""The extension's result types (extension/src/types.ts) name the same JSON fields as the
Python model that produces them: a field renamed, added or dropped on one side fails here."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from torchscope.analysis import Device, Finding, Timing, Verdict
from torchscope.analysis.multi.comparison import (
    CompareError,
    CompareSide,
    CompareVerdict,
    Comparison,
    CompiledInfo,
    CopyRow,
    Graph,
    OpChange,
    OpChanges,
    OpRow,
)
from torchscope.analysis.multi.compiled_lines import CompiledKernel, CompiledLine
from torchscope.analysis.multi.rank_model import RankSummary
from torchscope.analysis.multi.sweep import Sweep, SweepPoint
from torchscope.analysis.results import Borderline, FixOffer

TYPES_TS = Path(__file__).resolve().parents[2] / "extension" / "src" / "types.ts"
_INTERFACE = re.compile(r"export interface (\w+) \{\n(.*?)\n\}", re.S)
_FIELD = re.compile(r"^  (\w+)\??:", re.M)


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


# Interface → the keys of the JSON object the Python side writes for it.
MIRRORS: dict[str, set[str]] = {
    "Device": _fields(Device),
    "Verdict": _fields(Verdict),
    "Borderline": _fields(Borderline),
    "Timing": _fields(Timing),
    "Finding": _fields(Finding),
    "FixOffer": _fields(FixOffer),
    "CompareCopy": _fields(CopyRow),
    "CompareOp": _fields(OpRow),
    "CompareGraph": _fields(Graph),
    # CompareSide.to_dict inlines CompiledInfo's fields and drops the ``compiled`` holder;
    # Comparison.to_dict adds the compiled side's ``kernels`` when it has per-line times.
    "CompareSide": (_fields(CompareSide) - {"compiled"}) | _fields(CompiledInfo) | {"kernels"},
    "CompiledKernelInfo": _fields(CompiledKernel),
    "CompiledLineInfo": _fields(CompiledLine),
    "CompareVerdict": _fields(CompareVerdict),
    "CompareError": _fields(CompareError),
    "OpChange": _fields(OpChange),
    "OpChanges": _fields(OpChanges),
    # rules_skipped is not part of the JSON; lines_note comes with ``lines`` (CompiledLines.note).
    "Comparison": (_fields(Comparison) - {"rules_skipped"}) | {"lines_note"},
    "SweepPointInfo": (_fields(SweepPoint) - {"n"}) | {"N"},  # SweepPoint.to_dict
    "SweepInfo": _fields(Sweep),
    "RankRow": _fields(RankSummary),
}


def _interfaces() -> dict[str, set[str]]:
    text = TYPES_TS.read_text(encoding="utf-8")
    return {name: set(_FIELD.findall(body)) for name, body in _INTERFACE.findall(text)}


@pytest.mark.parametrize("name", sorted(MIRRORS))
def test_types_ts_mirrors_the_python_model(name: str) -> None:
    interfaces = _interfaces()
    assert name in interfaces, f"extension/src/types.ts lacks `export interface {name}`"
    ts, py = interfaces[name], MIRRORS[name]
    assert ts == py, (
        f"{name}: only in types.ts {sorted(ts - py)}, only in the Python model {sorted(py - ts)}"
    )
