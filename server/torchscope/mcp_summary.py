"""What ``torchscope mcp`` tells a model besides the JSON: short text summaries of a report, and
the documentation section of a finding (``explain_finding``).

Pure functions over the ``--json`` objects (the output contract), so they do not depend on the
host's or the analysis' Python types, and do not import the MCP SDK.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from torchscope.analysis import ALL_RULES, format_duration
from torchscope.analysis.rules.base import FINDINGS_DOC

#: The repository root of a source checkout (or an editable install), where the docs live.
REPO_ROOT = Path(__file__).resolve().parents[2]
MAX_FINDINGS = 6
MAX_LINES = 5
MAX_OUTPUT_LINES = 20


def _us(value: Optional[float]) -> str:
    return "?" if value is None else format_duration(value)


def _finding_lines(findings: list[dict[str, Any]]) -> list[str]:
    rows = []
    for f in findings[:MAX_FINDINGS]:
        where = f" (line {f['line']})" if f.get("line") else ""
        rows.append(f"  [{f['rule']}] {f['message']}{where}")
    if len(findings) > MAX_FINDINGS:
        rows.append(f"  … {len(findings) - MAX_FINDINGS} more in the structured report")
    return rows


def report_summary(data: dict[str, Any]) -> str:
    """A few lines a model reads before (or instead of) the full report: verdict, timing,
    findings, hot lines and the trace."""
    rows = []
    target = data.get("target")
    if target:
        call = data.get("call") or f"{target['qualname']}()"
        rows.append(f"{target['qualname']} ({target['file']}:{target['line']}), call: {call}")
    rows.append(f"verdict: {data['verdict']['headline']}")
    timing = data.get("timing")
    if timing:
        rows.append(
            f"per call without the profiler: median {_us(timing.get('median_us'))} "
            f"(min {_us(timing.get('min_us'))}, max {_us(timing.get('max_us'))}); "
            f"first call {_us(timing.get('cold_us'))}"
        )
    if data.get("findings"):
        rows += ["findings (by cost; explain_finding(rule) says what to do):"]
        rows += _finding_lines(data["findings"])
    lines = sorted(data.get("lines") or [], key=lambda x: -x["share"])[:MAX_LINES]
    if lines:
        hot = ", ".join(f"L{x['line']} {x['share'] * 100:.0f}% {_us(x['cpu_us'])}" for x in lines)
        rows.append(f"hot lines (share, CPU per call): {hot}")
    ops = data.get("top_ops") or []
    if ops:
        steps = max(1, len(data.get("steps") or []))
        gpu = (data.get("device") or {}).get("kind") == "cuda"
        rows.append(
            f"top ops per step (calls, self CPU{', device' if gpu else ''}): "
            + ", ".join(
                f"{op['name']} ×{op['calls'] / steps:.3g} {_us(op['self_cpu_us'])}"
                + (f" {_us(op.get('device_us'))}" if gpu else "")
                for op in ops[:5]
            )
        )
    if data.get("trace_path"):
        rows.append(f"trace: {data['trace_path']}")
    return "\n".join(rows)


def compare_summary(data: dict[str, Any]) -> str:
    """The eager profile's summary, then the comparison's verdict, error and findings."""
    compare = data["compare"]
    rows = [report_summary(data), ""]
    if compare.get("error"):
        error = compare["error"]
        rows.append(f"torch.compile failed ({error['kind']}): {error['message']}")
        rows.append("the eager profile above is still valid")
    else:
        rows.append(f"torch.compile (mode={compare['mode']}): {compare['verdict']['headline']}")
        compiled = compare.get("compiled") or {}
        if compiled.get("compile_s") is not None:
            rows.append(f"first compiled call (the compile): {compiled['compile_s']:.2f} s")
    if compare.get("findings"):
        rows += ["comparison findings:", *_finding_lines(compare["findings"])]
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


def explain(rule: str, doc: Optional[Path] = None) -> tuple[Optional[str], str]:
    """``(section, where)`` for a rule or verdict id: its section of the findings reference, or
    — without the docs (an installed wheel) — the rule's title and source. ``(None, message)``
    when the id is unknown, the message listing the known ids."""
    path = doc or REPO_ROOT / FINDINGS_DOC
    sections = doc_sections(path.read_text(encoding="utf-8")) if path.is_file() else {}
    name = rule.strip()
    if name in sections:
        return sections[name], f"{FINDINGS_DOC}#{name}"
    known = {r.id: r for r in ALL_RULES}
    if name in known:
        r = known[name]
        return f"### {r.id}\n\n{r.title}. *Source:* {r.source}", r.docs_anchor
    ids = sorted(set(sections) | set(known))
    return None, f"no finding or verdict named {name!r}; known: {', '.join(ids)}"
