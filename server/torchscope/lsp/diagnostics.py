"""Render profiles and failures as LSP diagnostics: the verdict on the ``def`` line, findings
on their own lines, failures where they happened."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from lsprotocol import types

from torchscope.analysis import format_duration
from torchscope.host.profile_run import ProfileFailure
from torchscope.lsp.constants import SOURCE
from torchscope.lsp.results import ProfiledFunction

#: Verdicts that say "this is as fast as the hardware allows" are information, not warnings.
INFORMATIONAL_VERDICTS = ("compute-bound",)

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def line_range(lines: list[str], line: int) -> types.Range:
    """The text of 1-based ``line`` without its indentation (the whole line if out of range)."""
    index = max(0, line - 1)
    text = lines[index] if index < len(lines) else ""
    start = len(text) - len(text.lstrip())
    return types.Range(
        start=types.Position(line=index, character=start),
        end=types.Position(line=index, character=max(start, len(text.rstrip()))),
    )


def _related_hot_lines(
    result: ProfiledFunction, report: dict[str, Any], lines: list[str], threshold: float
) -> list[types.DiagnosticRelatedInformation]:
    related = []
    for line in report.get("lines", [])[:3]:
        if line["share"] < threshold:
            break
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=result.uri, range=line_range(lines, result.current_line(line["line"]))
                ),
                message=(
                    f"hot line: {line['share'] * 100:.0f}% · {format_duration(line['cpu_us'])} CPU"
                    " per call"
                ),
            )
        )
    return related


def verdict_diagnostic(
    result: ProfiledFunction, lines: list[str], threshold: float
) -> types.Diagnostic:
    assert result.report is not None
    verdict = result.report["verdict"]
    severity = (
        types.DiagnosticSeverity.Information
        if verdict["id"] in INFORMATIONAL_VERDICTS
        else types.DiagnosticSeverity.Warning
    )
    message = verdict["headline"]
    if result.stale:
        message += " (stale: the function changed — re-profile)"
    return types.Diagnostic(
        range=line_range(lines, result.def_line),
        message=message,
        severity=severity,
        source=SOURCE,
        code=verdict["id"],
        related_information=_related_hot_lines(result, result.report, lines, threshold) or None,
        data={"qualname": result.qualname, "trace_path": result.report.get("trace_path")},
    )


def finding_diagnostics(result: ProfiledFunction, lines: list[str]) -> list[types.Diagnostic]:
    """Line-level findings that point into this document (dropped once the function changed)."""
    if result.report is None or result.stale:
        return []
    target_file = Path(result.report["target"]["file"]).resolve()
    found = []
    for finding in result.report.get("findings", []):
        line, file = finding.get("line"), finding.get("file")
        # A finding placed by a line marker names the line only: it is in the profiled file.
        if not isinstance(line, int) or (file and Path(file).resolve() != target_file):
            continue
        found.append(
            types.Diagnostic(
                range=line_range(lines, result.current_line(line)),
                message=finding["message"],
                severity=_SEVERITY.get(
                    finding.get("severity", ""), types.DiagnosticSeverity.Information
                ),
                source=SOURCE,
                code=finding["rule"],
            )
        )
    return found


def diagnostics_for(
    result: ProfiledFunction, lines: list[str], threshold: float
) -> list[types.Diagnostic]:
    if result.report is None:
        return [result.failure] if result.failure is not None else []
    found = [verdict_diagnostic(result, lines, threshold)]
    compare = result.report.get("compare")
    if isinstance(compare, dict) and not result.stale:
        from torchscope.lsp.compare_presentation import compare_diagnostic

        found.append(
            compare_diagnostic(
                compare, line_range(lines, result.def_line), result.uri, result.qualname
            )
        )
    return [*found, *finding_diagnostics(result, lines)]


def failure_diagnostic(
    failure: ProfileFailure, def_line: int, lines: list[str], qualname: Optional[str]
) -> types.Diagnostic:
    line = failure.line if failure.line and 0 < failure.line <= len(lines) else def_line
    return types.Diagnostic(
        range=line_range(lines, line),
        message=f"torchscope could not profile {qualname or 'this function'}: {failure.message}",
        severity=types.DiagnosticSeverity.Error,
        source=SOURCE,
        code=failure.kind,
        data={"qualname": qualname},
    )
