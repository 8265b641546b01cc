"""Words and numbers for the editor: inlay labels, hover markdown, lens titles.

Reads the profile JSON (the same object ``torchscope profile --json`` prints), so what the
editor says and what the CLI says cannot drift apart.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, Optional

from torchscope.analysis import format_duration

#: The client's command that opens a trace (see extension/src/constants.ts).
CLIENT_OPEN_TRACE = "torchscope.openTrace"
CLIENT_PROFILE = "torchscope.profileFunction"
#: Client commands (not ``torchscope.compareCompile``: that id is the server's command, which
#: vscode-languageclient registers as a VS Code command of the same name).
CLIENT_COMPARE_COMPILE = "torchscope.compareWithCompile"
CLIENT_PROFILE_SIZES = "torchscope.profileSizes"
CLIENT_OPEN_GENERATED_CODE = "torchscope.openGeneratedCode"


def is_gpu_run(report: dict[str, Any]) -> bool:
    return bool(report.get("device", {}).get("kind") == "cuda")


def line_label(line: dict[str, Any], gpu: bool, stale: bool) -> str:
    """``  41% · 2.1 ms CPU · 0.4 ms GPU`` (per call; no GPU part on CPU-only runs)."""
    parts = [f"{line['share'] * 100:.0f}%", f"{format_duration(line['cpu_us'])} CPU"]
    if gpu:
        parts.append(f"{format_duration(line['device_us'])} GPU")
    label = "  " + " · ".join(parts)
    return label + " (stale)" if stale else label


def callee_label(callee: dict[str, Any], caller: str, stale: bool) -> str:
    """``  called by fn: 38% · 1.2 ms CPU per call`` on a callee's ``def`` line."""
    label = (
        f"  called by {caller}: {callee['share'] * 100:.0f}% · "
        f"{format_duration(callee['cpu_us'])} CPU per call"
    )
    return label + " (stale)" if stale else label


def hot_lines(report: dict[str, Any], threshold: float) -> list[dict[str, Any]]:
    return [line for line in report.get("lines", []) if line.get("share", 0.0) >= threshold]


def command_link(title: str, command: str, argument: Any) -> str:
    encoded = urllib.parse.quote(json.dumps([argument]))
    return f"[{title}](command:{command}?{encoded})"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def line_hover(report: dict[str, Any], line: dict[str, Any], qualname: str, stale: bool) -> str:
    """The ops, kernels, copies and syncs of one line, per call of the function."""
    gpu = is_gpu_run(report)
    title = (
        f"**torchscope** · line {line['line']} · {line['share'] * 100:.0f}% of `{qualname}` · "
        f"{format_duration(line['cpu_us'])} CPU"
        + (f" · {format_duration(line['device_us'])} GPU" if gpu else "")
        + " per call"
    )
    parts = [title]
    if stale:
        parts.append(
            "*The function changed since it was profiled: re-profile for current numbers.*"
        )
    if line.get("hits", 1) not in (1, 1.0):
        parts.append(f"Runs {line['hits']:g}× per call.")
    if line.get("ops"):
        rows = [
            [
                f"`{op['name']}`",
                f"{op['calls']:g}",
                format_duration(op["self_cpu_us"]),
                op.get("shapes", ""),
            ]
            for op in line["ops"][:8]
        ]
        parts.append(_table(["op", "calls", "self CPU", "input shapes"], rows))
    if line.get("kernels"):
        rows = [
            [f"`{k['name'][:80]}`", f"{k['calls']:g}", format_duration(k["device_us"])]
            for k in line["kernels"][:6]
        ]
        parts.append(_table(["kernel", "calls", "device time"], rows))
    if line.get("copies"):
        rows = [
            [c["kind"], f"{c['calls']:g}", f"{c['bytes']:,.0f} B", format_duration(c["device_us"])]
            for c in line["copies"]
        ]
        parts.append(_table(["copy", "calls", "bytes", "device time"], rows))
    if line.get("syncs"):
        parts.append(
            f"Synchronisations: {line['syncs']:g} per call, {format_duration(line['sync_us'])} "
            "with the CPU waiting for the GPU."
        )
    if line.get("profiled_cpu_us"):
        parts.append(
            f"CPU per call is this line's share of the unprofiled time; under the profiler it "
            f"took {format_duration(line['profiled_cpu_us'])} (op times above are profiled)."
        )
    from torchscope.lsp.memory_presentation import memory_hover

    memory = memory_hover(line)
    if memory:
        parts.append(memory)
    parts.append(
        "Across steps (CPU): min "
        f"{format_duration(line['cpu_us_min'])} · median {format_duration(line['cpu_us_median'])}"
        f" · max {format_duration(line['cpu_us_max'])}"
    )
    return "\n\n".join(parts)


def def_hover(report: dict[str, Any], qualname: str, offset: int, stale: bool) -> str:
    """Verdict, timing (cold vs steady), top lines and a link to the trace."""
    verdict = report["verdict"]
    parts = [f"**torchscope** · `{qualname}` · {verdict['headline']}"]
    if stale:
        parts.append(
            "*The function changed since it was profiled: re-profile for current numbers.*"
        )
    timing = report.get("timing")
    if timing:
        parts.append(
            f"Per call, without the profiler: median {format_duration(timing['median_us'])} "
            f"(min {format_duration(timing['min_us'])}, max {format_duration(timing['max_us'])}, "
            f"{timing['calls']} calls); first call {format_duration(timing['cold_us'])}."
        )
    overhead = report.get("profiler_overhead_us")
    if overhead is not None:
        parts.append(f"Profiler overhead: {format_duration(overhead)} per call (not your code's).")
    lines = report.get("lines", [])[:3]
    if lines:
        rows = [
            [
                str(line["line"] + offset),
                f"{line['share'] * 100:.0f}%",
                format_duration(line["cpu_us"]),
            ]
            for line in lines
        ]
        parts.append(_table(["line", "share", "CPU per call"], rows))
    from torchscope.lsp.memory_presentation import memory_sentences

    parts += memory_sentences(report, offset)
    if isinstance(report.get("compare"), dict):
        from torchscope.lsp.compare_presentation import compare_hover

        parts.append(compare_hover(report["compare"]))
    parts.append(command_link("Open trace", CLIENT_OPEN_TRACE, {"path": report["trace_path"]}))
    return "\n\n".join(parts)


def headline_title(report: Optional[dict[str, Any]], stale: bool) -> Optional[str]:
    if report is None:
        return None
    headline = str(report["verdict"]["headline"])
    return f"{headline} (stale)" if stale else headline
