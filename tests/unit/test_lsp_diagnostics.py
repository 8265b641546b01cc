"""Rendering a profile as diagnostics: verdict on the def line, findings on theirs, edits."""

from __future__ import annotations

from lsprotocol import types

from torchscope.analysis import Device, Finding, Report, Verdict
from torchscope.analysis.measure.parts import LineStats
from torchscope.lsp.diagnostics import diagnostics_for
from torchscope.lsp.results import Profile, ProfiledFunction, ResultStore

SOURCE = "import torch\n\n\ndef f(x):\n    y = x @ x\n    torch.cuda.synchronize()\n    return y\n"


def _line(line: int, share: float, cpu_us: float) -> LineStats:
    return LineStats(line, share, cpu_us, 0.0, 1.0, cpu_us, cpu_us, cpu_us)


def report(file: str) -> Profile:
    findings = [
        Finding("sync", "warning", "sync here", 0.0, line=6),
        Finding("hidden-copy", "warning", "not ours", 0.0, line=5, file="/elsewhere/other.py"),
        Finding("cold-start", "information", "no line", 0.0),
    ]
    verdict = Verdict("sync-bound", "sync-bound: 1.8 ms of 2.1 ms waiting", 2100.0, 0.0)
    analysed = Report(
        device=Device("cuda", "GPU"),
        verdict=verdict,
        timing=None,
        profiler_overhead_us=None,
        findings=findings,
        top_ops=[],
        steps=[],
        lines=[_line(6, 0.8, 1800.0), _line(5, 0.02, 40.0)],
    )
    return Profile(analysed, file, "/t.json.gz")


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
