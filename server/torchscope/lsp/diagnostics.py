"""Render profiles and failures as LSP diagnostics: the verdict on the ``def`` line, findings
on their own lines, failures where they happened."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from lsprotocol import types

from torchscope.analysis import Finding, format_duration
from torchscope.host.profile_run import ProfileFailure
from torchscope.lsp.compare_presentation import compare_diagnostic
from torchscope.lsp.constants import SOURCE
from torchscope.lsp.ranks_presentation import headline
from torchscope.lsp.results import Profile, ProfiledFunction
from torchscope.report.causes import cause_phrase
from torchscope.report.fix import fix_phrase
from torchscope.report.stability import unstable_line

#: Verdicts that say "this is as fast as the hardware allows" are information, not warnings.
INFORMATIONAL_VERDICTS = ("compute-bound",)

SEVERITY = {
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


def finding_diagnostic(
    finding: Finding, range_: types.Range, suffix: str = "", trace_path: Optional[str] = None
) -> types.Diagnostic:
    """One finding as a diagnostic (its rule id as the code, its severity mapped); the one
    place a finding becomes a ``Diagnostic``."""
    return types.Diagnostic(
        range=range_,
        message=finding.message + fix_phrase(finding.fix) + suffix,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Information),
        source=SOURCE,
        code=finding.rule,
        data={"trace_path": trace_path} if trace_path is not None else None,
    )


def _related_hot_lines(
    result: ProfiledFunction, profile: Profile, lines: list[str], threshold: float
) -> list[types.DiagnosticRelatedInformation]:
    related = []
    for line in profile.report.lines[:3]:
        if line.share < threshold:
            break
        related.append(
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=result.uri, range=line_range(lines, result.current_line(line.line))
                ),
                message=(
                    f"hot line: {line.share * 100:.0f}% · {format_duration(line.cpu_us)} CPU"
                    " per call"
                ),
            )
        )
    return related


def verdict_diagnostic(
    result: ProfiledFunction, lines: list[str], threshold: float
) -> types.Diagnostic:
    assert result.report is not None
    verdict = result.report.report.verdict
    severity = (
        types.DiagnosticSeverity.Information
        if verdict.id in INFORMATIONAL_VERDICTS
        else types.DiagnosticSeverity.Warning
    )
    message = headline(result.report) + cause_phrase(verdict)
    if not verdict.stable:  # the same line as the CLI's (report/stability.py)
        message += f"\n{unstable_line(result.report.report)}"
    if result.stale:
        message += " (stale: the function changed — re-profile)"
    return types.Diagnostic(
        range=line_range(lines, result.def_line),
        message=message,
        severity=severity,
        source=SOURCE,
        code=verdict.id,
        related_information=_related_hot_lines(result, result.report, lines, threshold) or None,
        data={"qualname": result.qualname, "trace_path": result.report.trace_path},
    )


def finding_diagnostics(result: ProfiledFunction, lines: list[str]) -> list[types.Diagnostic]:
    """Line-level findings that point into this document (dropped once the function changed)."""
    if result.report is None or result.stale:
        return []
    target_file = Path(result.report.target_file).resolve()
    found = []
    for finding in result.report.report.findings:
        line, file = finding.line, finding.file
        # A finding placed by a line marker names the line only: it is in the profiled file.
        if line is None or (file and Path(file).resolve() != target_file):
            continue
        found.append(finding_diagnostic(finding, line_range(lines, result.current_line(line))))
    return found


def diagnostics_for(
    result: ProfiledFunction, lines: list[str], threshold: float
) -> list[types.Diagnostic]:
    if result.report is None:
        return [result.failure] if result.failure is not None else []
    found = [verdict_diagnostic(result, lines, threshold)]
    compare = result.report.comparison
    if compare is not None and not result.stale:
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
