"""A finding that has a fix says so: ``Finding.fix`` (``FixOffer``) on the findings a fix
answers (``Fix.answers``), when its rewrite applies to the profiled function on its device
and the finding is on one of the function's lines (or on none), except a fix that needs a
call's evidence (``inference-mode``). One fix per finding: the
first in ``ORDER``. ``measured`` stays None until a face tries the fix (``with_measured``)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any, Optional

from ...analysis.results import FixOffer, Report
from . import offered
from ._source import find_function


def _lines(source: str, function: str) -> Optional[range]:
    try:
        func = find_function(ast.parse(source), function)
    except SyntaxError:
        return None
    if func is None or func.end_lineno is None:
        return None
    first = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    return range(first, func.end_lineno + 1)


def attach_fixes(report: Report, source: str, function: str, device: str) -> Report:
    """``report`` with ``fix`` set on the findings a fix answers (the same object, changed)."""
    if not report.findings:
        return report
    lines = _lines(source, function)
    # A fix whose assumption only a call can show (inference-mode: nothing differentiates
    # through the function) is not suggested from a profile: ``--try`` checks it on a call.
    fixes = [
        fix
        for fix, _ in offered(source, function, device)
        if not any(c.get("kind") == "no-grad" for c in fix.conditions)
    ]
    if lines is None or not fixes:
        return report
    changed = []
    for finding in report.findings:
        fix = next((f for f in fixes if finding.rule in f.answers), None)
        if (
            fix is not None
            and finding.fix is None
            and (finding.line is None or finding.line in lines)
        ):
            finding = dataclasses.replace(finding, fix=FixOffer(fix.id, fix.title))
        changed.append(finding)
    report.findings = changed
    return report


def with_measured(report: Report, fix_id: str, measured: dict[str, Any]) -> Report:
    """A new ``report`` whose findings answered by ``fix_id`` carry what its trial measured
    (``FixTrial.measured()``); the report given is left as it was."""
    findings = [
        dataclasses.replace(f, fix=dataclasses.replace(f.fix, measured=measured))
        if f.fix is not None and f.fix.rule == fix_id
        else f
        for f in report.findings
    ]
    return dataclasses.replace(report, findings=findings)
