"""Words for a ``torch.compile`` comparison in the editor: the def-line diagnostic, the hover
section (side-by-side table, changed ops, findings, links to the generated code) and the lens.

Reads the ``compare`` object of the profile JSON (``profile --compare-compile --json``), so the
editor and the CLI say the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from lsprotocol import types

from torchscope.analysis import format_bytes, format_duration
from torchscope.lsp.constants import SOURCE
from torchscope.lsp.presentation import (
    CLIENT_OPEN_GENERATED_CODE,
    CLIENT_OPEN_TRACE,
    command_link,
)

#: Compare verdicts that recommend a change are warnings; the others are information.
WARNING_VERDICTS = ("compile-wins",)

ERROR_LINES = 12
"""Lines of the compiler's message shown in the hover (the rest is in the log)."""


def compare_of(report: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    found = report.get("compare") if report else None
    return found if isinstance(found, dict) else None


def _us(value: Any) -> str:
    return format_duration(float(value)) if isinstance(value, (int, float)) else "—"


def _copies(side: dict[str, Any]) -> str:
    copies = side.get("copies") or []
    if not copies:
        return "none"
    return "; ".join(
        f"{c['calls']:g}× {format_bytes(c['bytes'])} {c['kind']}"
        + (f" in `{c['within']}`" if c.get("within") else "")
        for c in copies
    )


def lens_title(report: Optional[dict[str, Any]]) -> Optional[str]:
    """``torch.compile: keep eager (3.4× slower)`` after a comparison, else None."""
    compare = compare_of(report)
    if compare is None:
        return None
    verdict = compare.get("verdict")
    if not verdict:
        return "torch.compile failed (eager shown) · retry"
    label = {
        "keep-eager": "keep eager",
        "compile-wins": "compile wins",
        "no-difference": "no difference",
    }.get(str(verdict["id"]), str(verdict["id"]))
    ratio = verdict.get("ratio")
    if isinstance(ratio, (int, float)) and ratio > 0 and verdict["id"] != "no-difference":
        factor = ratio if ratio >= 1 else 1 / ratio
        label += f" ({factor:.1f}× {'slower' if ratio >= 1 else 'faster'} compiled)"
    return f"torch.compile: {label}"


def compare_diagnostic(
    compare: dict[str, Any], range_: types.Range, uri: str, qualname: str
) -> types.Diagnostic:
    """The comparison's verdict (or the compile failure) on the ``def`` line; its findings
    ride along as related information."""
    verdict = compare.get("verdict")
    error = compare.get("error")
    if verdict is None:
        message = (error or {}).get("message", "torch.compile failed")
        first = message.strip().splitlines()[0] if message.strip() else message
        return types.Diagnostic(
            range=range_,
            message=f"{first} — the eager profile is shown",
            severity=types.DiagnosticSeverity.Warning,
            source=SOURCE,
            code=(error or {}).get("kind", "compile-failed"),
            data={"qualname": qualname, "compare": True},
        )
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=range_),
            message=f"{f['rule']}: {f['message']}",
        )
        for f in compare.get("findings", [])
    ]
    return types.Diagnostic(
        range=range_,
        message=str(verdict["headline"]),
        severity=(
            types.DiagnosticSeverity.Warning
            if verdict["id"] in WARNING_VERDICTS
            else types.DiagnosticSeverity.Information
        ),
        source=SOURCE,
        code=str(verdict["id"]),
        related_information=related or None,
        data={
            "qualname": qualname,
            "compare": True,
            "trace_path": (compare.get("compiled") or {}).get("trace_path"),
        },
    )


def _table(rows: list[tuple[str, str, str]]) -> str:
    lines = ["| per call | eager | torch.compile |", "|---|---:|---:|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def compare_hover(compare: dict[str, Any]) -> str:
    """The hover section: verdict, side-by-side table, changed ops, findings, code links."""
    mode = compare.get("mode", "default")
    eager, compiled = compare.get("eager") or {}, compare.get("compiled")
    if compiled is None:
        error = compare.get("error") or {}
        lines = str(error.get("message", "torch.compile failed")).splitlines()
        shown = "\n".join(lines[:ERROR_LINES])
        more = (
            f"\n… ({len(lines) - ERROR_LINES} more lines in the log)"
            if len(lines) > ERROR_LINES
            else ""
        )
        return (
            f"**torch.compile** (mode={mode}) failed — the eager numbers above stand.\n\n"
            f"```text\n{shown}{more}\n```"
        )
    verdict = compare.get("verdict") or {}
    parts = [f"**torch.compile** (mode={mode}) · {verdict.get('headline', '')}"]
    rows = [
        ("time, unprofiled (median)", _us(eager.get("median_us")), _us(compiled.get("median_us"))),
        ("CPU op time, profiled", _us(eager.get("cpu_us")), _us(compiled.get("cpu_us"))),
        ("device time", _us(eager.get("device_us")), _us(compiled.get("device_us"))),
        ("kernel launches", f"{eager.get('launches', 0):g}", f"{compiled.get('launches', 0):g}"),
        ("copies", _copies(eager), _copies(compiled)),
        ("ops", f"{eager.get('op_count', 0):g}", f"{compiled.get('op_count', 0):g}"),
        ("first call", _us(eager.get("cold_us")), f"{_us(compiled.get('cold_us'))} (compile)"),
    ]
    parts.append(_table(rows))
    changes = compare.get("changes") or {}
    if changes.get("summary"):
        parts.append(f"Ops changed: `{changes['summary']}`")
    findings = compare.get("findings") or []
    if findings:
        parts.append("\n".join(f"- `{f['rule']}`: {f['message']}" for f in findings))
    links = []
    for graph in compiled.get("graphs") or []:
        name = f"## Call CompiledFxGraph {graph['hash'][:12]}… ##"
        path = graph.get("code_path")
        if path:
            links.append(
                f"`{name}`: "
                + command_link(
                    f"open the generated code ({Path(path).name})",
                    CLIENT_OPEN_GENERATED_CODE,
                    {"path": path},
                )
            )
        else:
            links.append(f"`{name}`: generated code not found in Inductor's cache")
    if compiled.get("trace_path"):
        links.append(
            command_link("Open compiled trace", CLIENT_OPEN_TRACE, {"path": compiled["trace_path"]})
        )
    if links:
        parts.append(" · ".join(links))
    return "\n\n".join(parts)
