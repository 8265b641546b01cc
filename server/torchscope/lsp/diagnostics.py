"""Render profiles and failures as LSP diagnostics on the ``def`` line."""

from __future__ import annotations

from typing import Optional

from lsprotocol import types

from torchscope.host.profile_run import ProfileFailure, ProfileOutcome
from torchscope.lsp.constants import SOURCE

#: Verdicts that say "this is as fast as the hardware allows" are information, not warnings.
INFORMATIONAL_VERDICTS = ("compute-bound",)


def line_range(lines: list[str], line: int) -> types.Range:
    """The text of 1-based ``line`` without its indentation (the whole line if out of range)."""
    index = max(0, line - 1)
    text = lines[index] if index < len(lines) else ""
    start = len(text) - len(text.lstrip())
    return types.Range(
        start=types.Position(line=index, character=start),
        end=types.Position(line=index, character=max(start, len(text.rstrip()))),
    )


def verdict_diagnostic(outcome: ProfileOutcome, lines: list[str]) -> types.Diagnostic:
    verdict = outcome.report.verdict
    severity = (
        types.DiagnosticSeverity.Information
        if verdict.id in INFORMATIONAL_VERDICTS
        else types.DiagnosticSeverity.Warning
    )
    return types.Diagnostic(
        range=line_range(lines, outcome.target.def_line),
        message=verdict.headline,
        severity=severity,
        source=SOURCE,
        code=verdict.id,
        data={"qualname": outcome.target.qualname, "trace_path": outcome.result.trace_path},
    )


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
