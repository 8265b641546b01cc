"""The comparison in words: terminal text (the CLI) and Markdown (the editor's hover and its
comparison panel).

Both read one :class:`~torchscope.analysis.Comparison` and share the table
rows, so the CLI and the editor show the same numbers under the same labels. (The editor adds
its command links to the Markdown: those are the client's, not the report's.)
"""

from __future__ import annotations

from typing import Callable, Optional

from torchscope.analysis import CompareSide, Comparison, CompiledLine, CompiledLines
from torchscope.analysis.formatting import format_bytes, format_duration
from torchscope.report.stability import comparison_lines

ERROR_LINES = 12
"""Lines of the compiler's message shown in the hover (the rest is in the log)."""


def _us(value: Optional[float]) -> str:
    return format_duration(float(value)) if value is not None else "—"


def _copies_cell(side: CompareSide, code: Callable[[str], str]) -> str:
    if not side.copies:
        return "none"
    return "; ".join(
        f"{c.calls:g}× {format_bytes(c.bytes)} {c.kind}"
        + (f" in {code(c.within)}" if c.within else "")
        for c in side.copies
    )


def comparison_rows(
    eager: CompareSide, compiled: CompareSide, code: Callable[[str], str] = str
) -> list[tuple[str, str, str]]:
    """Label, eager, compiled: the side-by-side table (``code`` marks op names)."""
    return [
        ("time per call (unprofiled)", _us(eager.median_us), _us(compiled.median_us)),
        (
            "  min … max",
            f"{_us(eager.min_us)} … {_us(eager.max_us)}",
            f"{_us(compiled.min_us)} … {_us(compiled.max_us)}",
        ),
        ("CPU op time per call (profiled)", _us(eager.cpu_us), _us(compiled.cpu_us)),
        ("device time per call", _us(eager.device_us), _us(compiled.device_us)),
        ("kernel launches per call", f"{eager.launches:g}", f"{compiled.launches:g}"),
        ("copies per call", _copies_cell(eager, code), _copies_cell(compiled, code)),
        # top-level, as the steps table counts them; then every op, nested ones included
        # (the "ops per call 110" beside the steps table's 19 for the same function)
        ("top-level ops per call", f"{eager.top_level_ops:g}", f"{compiled.top_level_ops:g}"),
        ("  all ops, nested included", f"{eager.op_count:g}", f"{compiled.op_count:g}"),
        ("first call", _us(eager.cold_us), f"{_us(compiled.cold_us)} (compile)"),
    ]


def _line_list(lines: list[int]) -> str:
    if len(lines) == 1:
        return f"line {lines[0]}"
    if lines == list(range(lines[0], lines[-1] + 1)):
        return f"lines {lines[0]}–{lines[-1]}"
    return "lines " + ", ".join(map(str, lines))


def line_versus(line: CompiledLine, lines: CompiledLines) -> str:
    """``line 7: eager 40 µs → compiled 12 µs (fused with line 8: relu, mul, sum)``; a graph
    break on the line says so with the first line of Dynamo's reason."""
    kernels = [k for k in lines.kernels if k.name in line.kernels and line.line in k.lines]
    ops = ", ".join(dict.fromkeys(op for k in kernels for op in k.ops))
    if line.fused_with:
        how = f" (fused with {_line_list(line.fused_with)}: {ops})"
    elif kernels and all(k.extern for k in kernels):
        how = f" ({ops or 'extern'}: an extern kernel)"
    else:
        how = f" ({ops})" if ops else ""
    text = f"line {line.line}: eager {_us(line.eager_us)} → "
    text += f"compiled {_us(line.compiled_us)}{how}" if kernels else "compiled: no kernel"
    if line.graph_break is not None:
        reason = line.graph_break.strip().splitlines()[0] if line.graph_break.strip() else ""
        text += f"; graph break here{': ' + reason if reason else ''}"
    return text


def lines_text(lines: CompiledLines) -> list[str]:
    """The per-line section of the comparison (no lines: its note)."""
    if not lines.lines:
        return [f"  per line: {lines.note}"] if lines.note else []
    out = [
        f"  per line, profiled, eager → compiled (a fused kernel's time is on each of its "
        f"lines, once in the {_us(lines.total_us)} of kernels):"
    ]
    out += [f"    {line_versus(line, lines)}" for line in lines.lines]
    unplaced = [k.name for k in lines.kernels if not k.lines]
    if unplaced:
        out.append(f"    no provenance (not on a line): {', '.join(unplaced)}")
    return out


def _lines_markdown(lines: CompiledLines) -> list[str]:
    if not lines.lines:
        return [f"Per line: {lines.note}"] if lines.note else []
    rows = [f"- {line_versus(line, lines)}" for line in lines.lines]
    return [
        "Per line, profiled (a fused kernel's time is on each of its lines):\n" + "\n".join(rows)
    ]


def render_comparison(compare: Comparison) -> str:
    """The comparison as terminal text."""
    compiled = compare.compiled
    lines = [f"torch.compile (mode={compare.mode}) vs eager:"]
    if compiled is None:
        message = compare.error.message if compare.error else "no compiled run"
        lines.append(f"  torch.compile failed — the eager profile above stands.\n  {message}")
        return "\n".join(lines)
    rows = [("", "eager", "compiled"), *comparison_rows(compare.eager, compiled)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        lines.append(f"  {r[0].ljust(widths[0])}  {r[1].rjust(widths[1])}  {r[2].rjust(widths[2])}")
    if compare.changes is not None and compare.changes.summary:
        lines.append(f"  ops changed: {compare.changes.summary}")
    info = compiled.compiled
    for graph in info.graphs if info else []:
        where = graph.code_path or "(generated code not found on disk)"
        lines.append(f"  CompiledFxGraph {graph.hash[:12]}…: {where}")
    if info is not None and info.recompiles:
        lines.append(f"  recompiles during the measured calls: {info.recompiles}")
    if compiled.trace_path:
        lines.append(f"  compiled trace: {compiled.trace_path}")
    if compare.lines is not None:
        lines += lines_text(compare.lines)
    if compare.verdict is not None:
        lines.append(f"verdict: {compare.verdict.headline}")
    lines += comparison_lines(compare.comparison)
    lines += side_lines(compare)
    for f in compare.findings:
        lines.append(f"  [{f.rule}] {f.message}")
    return "\n".join(lines)


def side_lines(compare: Comparison) -> list[str]:
    """``eager: unstable: …`` for each side whose timing failed ``profile``'s checks."""
    sides = [("eager", compare.eager), ("compiled", compare.compiled)]
    return [f"  {name}: {side.unstable_reason}" for name, side in sides if side and not side.stable]


def _code(text: str) -> str:
    return f"`{text}`"


def comparison_markdown(compare: Comparison) -> str:
    """The comparison as Markdown: verdict, side-by-side table, changed ops, findings; or the
    compiler's error (its first :data:`ERROR_LINES` lines)."""
    compiled = compare.compiled
    if compiled is None:
        message = compare.error.message if compare.error else "torch.compile failed"
        lines = message.splitlines()
        more = len(lines) - ERROR_LINES
        tail = f"\n… ({more} more lines in the log)" if more > 0 else ""
        shown = "\n".join(lines[:ERROR_LINES])
        return (
            f"**torch.compile** (mode={compare.mode}) failed — the eager numbers above stand."
            f"\n\n```text\n{shown}{tail}\n```"
        )
    headline = compare.verdict.headline if compare.verdict else ""
    parts = [f"**torch.compile** (mode={compare.mode}) · {headline}"]
    table = ["| per call | eager | torch.compile |", "|---|---:|---:|"]
    table += [
        f"| {a.strip()} | {b} | {c} |"
        for a, b, c in comparison_rows(compare.eager, compiled, _code)
    ]
    parts.append("\n".join(table))
    if compare.changes is not None and compare.changes.summary:
        parts.append(f"Ops changed: `{compare.changes.summary}`")
    if compare.lines is not None:
        parts += _lines_markdown(compare.lines)
    said = [line.strip() for line in comparison_lines(compare.comparison) + side_lines(compare)]
    if said:
        parts.append("\n\n".join(said))
    if compare.findings:
        parts.append("\n".join(f"- `{f.rule}`: {f.message}" for f in compare.findings))
    return "\n\n".join(parts)


def comparison_page_markdown(qualname: str, compare: Comparison) -> str:
    """The editor's comparison panel: a heading, :func:`comparison_markdown`, and where the
    code Inductor generated for each graph is (the panel runs no commands: paths, not links)."""
    parts = [
        f"## `{qualname}`: eager vs torch.compile (mode={compare.mode})",
        comparison_markdown(compare),
    ]
    info = compare.compiled.compiled if compare.compiled else None
    for graph in info.graphs if info else []:
        where = f"`{graph.code_path}`" if graph.code_path else "generated code not found"
        parts.append(f"`## Call CompiledFxGraph {graph.hash} ##` → {where}")
    return "\n\n".join(parts)


def comparison_outcome_text(
    compare: Comparison, compile_traceback: str, verbose: bool
) -> tuple[str, list[str]]:
    """What ``profile --compare-compile`` prints after the eager profile: the comparison, and
    (first, on stderr) a failed compile's message, its traceback (``verbose``) and that the
    eager profile is still reported."""
    stderr = []
    error = compare.error
    if error:
        stderr.append(f"torchscope: {error.message}")
        if compile_traceback and verbose:
            stderr.append(compile_traceback)
        stderr.append("torchscope: the eager profile is still reported")
    return render_comparison(compare) + "\n", stderr
