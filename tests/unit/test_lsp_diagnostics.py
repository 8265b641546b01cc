"""Rendering a profile as diagnostics: verdict on the def line, findings on theirs, edits."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from torchscope.lsp.diagnostics import diagnostics_for
from torchscope.lsp.results import ProfiledFunction, ResultStore

SOURCE = "import torch\n\n\ndef f(x):\n    y = x @ x\n    torch.cuda.synchronize()\n    return y\n"


def report(file: str) -> dict[str, Any]:
    return {
        "target": {"file": file, "qualname": "f", "line": 4},
        "verdict": {"id": "sync-bound", "headline": "sync-bound: 1.8 ms of 2.1 ms waiting"},
        "findings": [
            {"rule": "sync", "line": 6, "file": None, "severity": "warning", "message": "sync here"},
            {"rule": "hidden-copy", "line": 5, "file": "/elsewhere/other.py", "severity": "warning", "message": "not ours"},
            {"rule": "cold-start", "line": None, "file": None, "severity": "information", "message": "no line"},
        ],
        "lines": [{"line": 6, "share": 0.8, "cpu_us": 1800.0}, {"line": 5, "share": 0.02, "cpu_us": 40.0}],
        "trace_path": "/t.json.gz",
    }


def function(file: str) -> ProfiledFunction:
    return ProfiledFunction(
        uri="file:///w/m.py", qualname="f", first_line=4, def_line=4, end_line=7,
        report=report(file), synced_text=SOURCE, function_text="\n".join(SOURCE.splitlines()[3:7]),
    )


def test_verdict_on_def_line_with_hot_lines_related_and_findings_on_their_lines() -> None:
    result = function("/w/m.py")
    verdict, sync = diagnostics_for(result, SOURCE.splitlines(), threshold=0.05)
    assert verdict.range.start.line == 3 and verdict.code == "sync-bound"
    assert verdict.severity == types.DiagnosticSeverity.Warning
    assert [r.location.range.start.line for r in verdict.related_information or []] == [5]
    assert sync.code == "sync" and sync.range.start.line == 5 and sync.range.start.character == 4


def test_shift_moves_everything_and_stale_drops_line_findings() -> None:
    store = ResultStore()
    result = function("/w/m.py")
    store.put(result)
    edit = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        text="# one\n# two\n",
    )
    shifted_source = "# one\n# two\n" + SOURCE
    assert store.apply_change(result.uri, edit, shifted_source)
    verdict, sync = diagnostics_for(result, shifted_source.splitlines(), threshold=0.05)
    assert verdict.range.start.line == 5 and sync.range.start.line == 7
    inside = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=7, character=4), end=types.Position(line=7, character=4)),
        text="z = 1; ",
    )
    assert store.apply_change(result.uri, inside, shifted_source)
    [verdict] = diagnostics_for(result, shifted_source.splitlines(), threshold=0.05)
    assert "stale" in verdict.message
