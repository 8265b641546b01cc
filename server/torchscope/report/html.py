"""The notebook's HTML report: the verdict with its numbers, the function's source with each
line's share as a bar, the top ops and kernels, the findings with links to their docs, the
sweep chart and the Perfetto link.

One self-contained fragment: an inline ``<style>`` scoped to ``.tsc``, no scripts, nothing
fetched, colours that read on light and dark themes (text inherits the notebook's colour), so
JupyterLab, the classic Notebook and VS Code's notebook renderer show it alike. The per-line
rows are ``lines.py``'s; the op and kernel tables ``text.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Optional

from torchscope.analysis.formatting import format_duration, format_share
from torchscope.analysis.results import Finding, Report
from torchscope.report.lines import line_rows
from torchscope.report.stability import stability_lines
from torchscope.report.sweep_chart import VERDICT_COLOURS
from torchscope.report.text import kernel_rows, op_rows

OTHER_VERDICT = "#6a6aa8"

STYLE = """
.tsc{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.4;
max-width:980px;color:inherit}
.tsc h4{margin:14px 0 6px;font-size:13px;font-weight:600;opacity:.85}
.tsc .head{display:flex;align-items:center;gap:10px;flex-wrap:wrap}
.tsc .badge{color:#fff;border-radius:4px;padding:2px 8px;font-weight:600}
.tsc .headline{font-size:14px;font-weight:500}
.tsc .meta{opacity:.75;margin:4px 0 8px}
.tsc .isolation{border-left:3px solid #d9822b;padding:1px 8px;margin:6px 0;opacity:.9}
.tsc .tiles{display:flex;gap:8px;flex-wrap:wrap}
.tsc .tile{border:1px solid rgba(128,128,128,.35);border-radius:6px;padding:4px 10px;
min-width:92px}
.tsc .tile b{display:block;font-size:15px}
.tsc .tile span{font-size:11px;opacity:.7}
.tsc table{border-collapse:collapse;font-size:12px}
.tsc td,.tsc th{padding:1px 8px;text-align:right;white-space:nowrap;border:none}
.tsc th{font-weight:600;opacity:.75;border-bottom:1px solid rgba(128,128,128,.35)}
.tsc td.l,.tsc th.l{text-align:left}
.tsc table.src td{padding:0 6px}
.tsc table.src td.code{text-align:left;font-family:ui-monospace,Menlo,Consolas,monospace;
white-space:pre}
.tsc table.src td.no{opacity:.55;font-family:ui-monospace,Menlo,Consolas,monospace}
.tsc table.src tr.hot td.code{font-weight:600}
.tsc .bar{width:120px;height:10px;background:rgba(128,128,128,.15);border-radius:2px}
.tsc .bar div{height:10px;border-radius:2px;background:#d9822b}
.tsc .sev{border-radius:3px;padding:0 5px;font-size:11px;color:#fff;background:#b58900}
.tsc .sev.error{background:#c0392b}
.tsc .sev.info,.tsc .sev.information{background:#4a78c0}
.tsc ul.findings{margin:0;padding-left:18px}
.tsc ul.findings li{margin:2px 0}
.tsc .foot{margin-top:10px;opacity:.8;font-size:12px}
.tsc .foot a{font-weight:600}
.tsc pre{font-size:12px;margin:4px 0}
.tsc .chart svg{max-width:100%;height:auto}
"""


@dataclass
class HtmlView:
    """What the HTML shows besides the report: where the function is and what it ran."""

    title: str
    """The function's name."""
    location: str
    """``Cell In[3], line 2`` or ``model.py:12``."""
    call: str
    source: list[tuple[int, str]] = field(default_factory=list)
    """The function's source lines with their numbers (as the report's lines count them)."""
    note: str = ""
    """A caveat shown under the header (the profile ran in-process)."""
    perfetto_link: Optional[str] = None
    perfetto_message: str = ""
    """Why there is no link, or how long it lives."""
    trace_path: str = ""
    docs_base: str = ""
    """Where ``docs/findings.md`` links resolve (a URL prefix; "" leaves them relative)."""
    chart_svg: str = ""
    """The sweep chart (``sweep_chart.sweep_svg``)."""
    extra_title: str = ""
    extra_text: str = ""
    """A preformatted section (the sweep table, the eager/compiled comparison)."""


def _tile(value: str, label: str) -> str:
    return f'<div class="tile"><b>{escape(value)}</b><span>{escape(label)}</span></div>'


def _numbers(report: Report) -> str:
    v, tiles = report.verdict, []
    if report.timing is not None:
        t = report.timing
        tiles.append(_tile(format_duration(t.median_us), f"per call (median of {t.calls})"))
        tiles.append(_tile(format_share(t.spread), f"spread ({t.samples} samples)"))
        tiles.append(_tile(format_duration(t.cold_us), "first call"))
    tiles.append(_tile(format_duration(v.cpu_us), "CPU per call"))
    if report.device.kind != "cpu":
        tiles.append(_tile(format_duration(v.device_us), "device per call"))
    if v.overhead_share is not None:
        label = "device idle" if report.device.kind != "cpu" else "dispatch overhead"
        tiles.append(_tile(format_share(v.overhead_share), label))
    if v.efficiency is not None:
        tiles.append(_tile(format_share(v.efficiency), "of peak (top op)"))
    if report.profiler_overhead_us is not None:
        tiles.append(_tile(format_duration(report.profiler_overhead_us), "profiler overhead/step"))
    return f'<div class="tiles">{"".join(tiles)}</div>'


def _bar(share: float) -> str:
    width = max(0.0, min(1.0, share)) * 100
    return f'<div class="bar"><div style="width:{width:.1f}%"></div></div>'


def _source(report: Report, view: HtmlView) -> str:
    """The function's source, each profiled line with its share bar and time per call."""
    rows = {row.stats.line: row for row in line_rows(report)}
    if not rows or not view.source:
        return ""
    gpu = report.device.kind == "cuda"
    hottest = max(rows.values(), key=lambda r: r.stats.share).stats.line
    head = '<th class="l">share</th><th></th><th>CPU</th>' + ("<th>GPU</th>" if gpu else "")
    out = [f'<table class="src"><tr>{head}<th>line</th><th class="l">source</th></tr>']
    for number, code in view.source:
        row = rows.get(number)
        cells = ["<td></td><td></td><td></td>" + ("<td></td>" if gpu else "")]
        if row is not None:
            cells = [
                f"<td>{_bar(row.stats.share)}</td><td>{escape(row.share)}</td>"
                f"<td>{escape(row.cpu)}</td>" + (f"<td>{escape(row.gpu)}</td>" if gpu else "")
            ]
        hot = ' class="hot"' if number == hottest else ""
        out.append(
            f'<tr{hot}>{cells[0]}<td class="no">{number}</td>'
            f'<td class="code">{escape(code.rstrip())}</td></tr>'
        )
    out.append("</table>")
    return "<h4>Per line (share of a call · time per call)</h4>" + "".join(out)


def _table(title: str, head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return ""
    header = "".join(
        f"<th{' class=l' if i == 0 else ''}>{escape(h)}</th>" for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=l' if i == 0 else ''}>{escape(c)}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return f"<h4>{escape(title)}</h4><table><tr>{header}</tr>{body}</table>"


def _finding(f: Finding, docs_base: str) -> str:
    where = f" line {f.line}" if f.line is not None else ""
    per = "once" if f.details.get("once") else "per step"
    cost = f" (costs {format_duration(f.cost_us)} {per})" if f.cost_us > 0 else ""
    rule = escape(f.rule)
    if f.docs:
        rule = f'<a href="{escape(docs_base + f.docs, quote=True)}" target="_blank">{rule}</a>'
    severity = f'<span class="sev {escape(f.severity)}">{escape(f.severity)}</span>'
    return f"<li>{severity} <b>{rule}</b>{where}: {escape(f.message)}{escape(cost)}</li>"


def _findings(report: Report, docs_base: str) -> str:
    if not report.findings:
        return "<h4>Findings</h4><div>none</div>"
    items = "".join(_finding(f, docs_base) for f in report.findings)
    head = f"<h4>Findings ({len(report.findings)}, by cost per step)</h4>"
    return f'{head}<ul class="findings">{items}</ul>'


def _chart(svg: str) -> str:
    if not svg:
        return ""
    start = svg.find("<svg")
    return f'<h4>Across sizes</h4><div class="chart">{svg[start:]}</div>'


def _foot(view: HtmlView, notes: list[str]) -> str:
    parts = [f"<div>note: {escape(n)}</div>" for n in notes]
    if view.perfetto_link:
        link = escape(view.perfetto_link, quote=True)
        parts.append(f'<div><a href="{link}" target="_blank">Open the trace in Perfetto ↗</a>')
        parts[-1] += (
            f" {escape(view.perfetto_message)}</div>" if view.perfetto_message else "</div>"
        )
    elif view.perfetto_message:
        parts.append(f"<div>Perfetto: {escape(view.perfetto_message)}</div>")
    if view.trace_path:
        parts.append(f"<div>trace: <code>{escape(view.trace_path)}</code></div>")
    return f'<div class="foot">{"".join(parts)}</div>'


def render_html(report: Report, view: HtmlView) -> str:
    """The whole report as one HTML fragment."""
    v = report.verdict
    colour = VERDICT_COLOURS.get(v.id, OTHER_VERDICT)
    devices = ", ".join(sorted({d.name for d in report.devices})) or report.device.name
    out = [
        f'<div class="tsc"><style>{STYLE}</style>',
        f'<div class="head"><span class="badge" style="background:{colour}">{escape(v.id)}</span>'
        f'<span class="headline">{escape(v.headline)}</span></div>',
        f'<div class="meta"><b>{escape(view.title)}</b> · {escape(view.location)} · '
        f"<code>{escape(view.call)}</code> · "
        f"{escape(report.device.kind)} ({escape(devices)})</div>",
    ]
    if view.note:
        out.append(f'<div class="isolation">{escape(view.note)}</div>')
    out += [f'<div class="isolation">{escape(line)}</div>' for line in stability_lines(report)]
    out.append(_numbers(report))
    out.append(_source(report, view))
    out.append(_table("Top ops (per step)", *op_rows(report)))
    out.append(_table("Top kernels (device time per step)", *kernel_rows(report)))
    out.append(_findings(report, view.docs_base))
    out.append(_chart(view.chart_svg))
    if view.extra_text:
        out.append(f"<h4>{escape(view.extra_title)}</h4><pre>{escape(view.extra_text)}</pre>")
    out.append(_foot(view, report.notes))
    out.append("</div>")
    return "\n".join(part for part in out if part)
