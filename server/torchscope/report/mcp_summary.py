"""What ``torchscope mcp`` tells a model besides the JSON: short text summaries of a report, and
the documentation section of a finding (``explain_finding``).

Pure functions over the typed results (a job's outcome as ``report/outcomes.py`` describes it,
the analysis' ``Report`` and ``Comparison``); they import neither the MCP SDK nor the host.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

from torchscope.analysis.engine import ALL_RULES, FINDINGS_DOC
from torchscope.analysis.formatting import format_duration
from torchscope.analysis.results import Finding, Report
from torchscope.report.lines import hot_lines_text
from torchscope.report.outcomes import ComparedCall, ProfiledCall
from torchscope.report.stability import comparison_lines, stability_lines

#: The findings reference, shipped in the package (``torchscope/report/findings.md``: in git a
#: symlink to ``docs/findings.md``, in a wheel the file itself; pyproject.toml's package-data).
FINDINGS_RESOURCE = ("torchscope.report", "findings.md")
MAX_FINDINGS = 6
MAX_LINES = 5
MAX_OUTPUT_LINES = 20


def _us(value: Optional[float]) -> str:
    return "?" if value is None or not math.isfinite(value) else format_duration(value)


def _finding_lines(findings: list[Finding]) -> list[str]:
    rows = []
    for f in findings[:MAX_FINDINGS]:
        where = f" (line {f.line})" if f.line else ""
        rows.append(f"  [{f.rule}] {f.message}{where}")
    if len(findings) > MAX_FINDINGS:
        rows.append(f"  … {len(findings) - MAX_FINDINGS} more in the structured report")
    return rows


def _top_ops(report: Report) -> Optional[str]:
    if not report.top_ops:
        return None
    steps = max(1, len(report.steps))
    gpu = report.device.kind == "cuda"
    return f"top ops per step (calls, self CPU{', device' if gpu else ''}): " + ", ".join(
        f"{op.name} ×{op.calls / steps:.3g} {_us(op.self_cpu_us)}"
        + (f" {_us(op.device_us)}" if gpu else "")
        for op in report.top_ops[:5]
    )


def report_summary(report: Report, trace_path: str, head: str = "") -> str:
    """A few lines a model reads before (or instead of) the full report: ``head`` (what was
    profiled), verdict, timing, findings, hot lines and the trace."""
    rows = [head] if head else []
    rows.append(f"verdict: {report.verdict.headline}")
    rows += stability_lines(report)
    timing = report.timing
    if timing:
        rows.append(
            f"per call without the profiler: median {_us(timing.median_us)} "
            f"(min {_us(timing.min_us)}, max {_us(timing.max_us)}, spread "
            f"{timing.spread:.0%} over {timing.samples} samples); "
            f"first call {_us(timing.cold_us)}"
        )
    if report.findings:
        rows += ["findings (by cost; explain_finding(rule) says what to do):"]
        rows += _finding_lines(report.findings)
    hot = hot_lines_text(report, MAX_LINES)
    if hot:
        rows.append(hot)
    ops = _top_ops(report)
    if ops:
        rows.append(ops)
    if trace_path:
        rows.append(f"trace: {trace_path}")
    return "\n".join(rows)


def profile_summary(outcome: ProfiledCall) -> str:
    """:func:`report_summary` of one profile, headed by the function and the call."""
    target = outcome.target
    call = outcome.call or f"{target.qualname}()"
    head = f"{target.qualname} ({target.file}:{target.def_line}), call: {call}"
    return report_summary(outcome.report, outcome.result.trace_path, head)


def compare_summary(outcome: ComparedCall) -> str:
    """The eager profile's summary, then the comparison's verdict, error and findings."""
    compare = outcome.compare
    rows = [profile_summary(outcome.profile), ""]
    if compare.error:
        rows.append(f"torch.compile failed ({compare.error.kind}): {compare.error.message}")
        rows.append("the eager profile above is still valid")
    elif compare.verdict is not None:
        rows.append(f"torch.compile (mode={compare.mode}): {compare.verdict.headline}")
        rows += [line.strip() for line in comparison_lines(compare.comparison)]
        info = compare.compiled.compiled if compare.compiled else None
        if info is not None and info.compile_s is not None and math.isfinite(info.compile_s):
            rows.append(f"first compiled call (the compile): {info.compile_s:.2f} s")
    if compare.findings:
        rows += ["comparison findings:", *_finding_lines(compare.findings)]
    return "\n".join(rows)


def output_tail(output: list[str]) -> str:
    """What the user's code printed, last lines only (it may print a lot)."""
    lines = "".join(output).splitlines()
    if not lines:
        return ""
    skipped = len(lines) - MAX_OUTPUT_LINES
    head = [f"… {skipped} earlier lines"] if skipped > 0 else []
    return "\n".join(["the function printed:", *head, *lines[-MAX_OUTPUT_LINES:]])


def doc_sections(text: str) -> dict[str, str]:
    """``### id`` sections of the findings reference by id (``### a, b`` serves a and b)."""
    sections: dict[str, str] = {}
    ids: list[str] = []
    body: list[str] = []

    def close() -> None:
        for name in ids:
            sections[name] = "\n".join(body).strip()

    for line in text.splitlines():
        if line.startswith(("### ", "## ", "# ")):
            close()
            ids, body = [], []
            if line.startswith("### "):
                ids = [part.strip() for part in line[4:].split(",") if part.strip()]
        if ids:
            body.append(line)
    close()
    return sections


def _findings_text(doc: Optional[Path]) -> str:
    """The findings reference: ``doc``, else the package's copy; ``""`` where it is missing."""
    from importlib.resources import files

    package, name = FINDINGS_RESOURCE
    resource = doc if doc is not None else files(package).joinpath(name)
    try:
        return resource.read_text(encoding="utf-8")
    except OSError:
        return ""


def explain(rule: str, doc: Optional[Path] = None) -> tuple[Optional[str], str]:
    """``(section, where)`` for a rule or verdict id: its section of the findings reference, or
    — should the reference be missing — the rule's title and source. ``(None, message)`` when
    the id is unknown, the message listing the known ids."""
    sections = doc_sections(_findings_text(doc))
    name = rule.strip()
    if name in sections:
        return sections[name], f"{FINDINGS_DOC}#{name}"
    known = {r.id: r for r in ALL_RULES}
    if name in known:
        r = known[name]
        return f"### {r.id}\n\n{r.title}. *Source:* {r.source}", r.docs_anchor
    ids = sorted(set(sections) | set(known))
    return None, f"no finding or verdict named {name!r}; known: {', '.join(ids)}"
