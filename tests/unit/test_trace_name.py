"""The worker names its traces: Kineto's ``traceName`` (the export path) becomes the function and
the time, without reading the whole file."""

from __future__ import annotations

import json
from pathlib import Path

from torchscope.worker.profiling import _name_trace

KINETO_TAIL = '{\n  "schemaVersion": 1,\n  "traceEvents": [\n  {"ph": "X", "name": "aten::mm"}\n  ],"traceName": "/tmp/tmpab12.json" }\n'


def test_trace_name_replaces_the_export_path(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    big = KINETO_TAIL.replace('{"ph"', '{"pad": "' + "x" * 20000 + '"}, {"ph"')
    path.write_text(big)
    _name_trace(str(path), 'model.py::Net.forward · 2026-01-02 03:04:05 "q"')
    doc = json.loads(path.read_text())
    assert doc["traceName"] == 'model.py::Net.forward · 2026-01-02 03:04:05 "q"'
    assert doc["traceEvents"][1] == {"ph": "X", "name": "aten::mm"}


def test_other_layouts_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('[{"ph": "X", "name": "a"}]')
    _name_trace(str(path), "fn")
    assert path.read_text() == '[{"ph": "X", "name": "a"}]'
