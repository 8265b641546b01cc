"""The text report of one profile, as ``torchscope profile`` prints it and the notebook shows
it: the target, the call, where its inputs came from, the report, the annotated listing, and
the trace with the command that opens it."""

from __future__ import annotations

import datetime
import shlex
import time
from typing import Optional

from torchscope.protocol import Inputs
from torchscope.report.outcomes import ProfiledCall
from torchscope.report.text import render_report


def age_text(captured_at: Optional[str], now: Optional[float] = None) -> str:
    """``5 min ago`` from an ISO time; "" when unknown."""
    if not captured_at:
        return ""
    try:
        then = datetime.datetime.fromisoformat(captured_at).timestamp()
    except ValueError:
        return ""
    seconds = max(0.0, (time.time() if now is None else now) - then)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def open_command(trace: str) -> str:
    """The exact command that opens ``trace`` in the Perfetto UI."""
    return f"torchscope analyze {shlex.quote(trace)} --open"


def render_text(outcome: ProfiledCall, listing: str, open_hint: bool = True) -> str:
    """``outcome`` as text; ``listing`` is the function's source with its margin
    (``report/lines.py``), ``open_hint`` adds the command that opens the trace."""
    target = outcome.target
    trace_path = outcome.result.trace_path
    arguments = _ARGUMENTS.get(outcome.result.inputs.source, "()")
    lines = [
        f"== {target.qualname} ({target.file}:{target.def_line})",
        f"   call: {outcome.call or target.qualname + arguments}",
        *_inputs_line(outcome.result.inputs),
        render_report(outcome.report),
    ]
    if outcome.report.lines:
        lines += ["", listing]
    elif outcome.result.attribution_note:
        lines += ["", outcome.result.attribution_note]
    lines += ["", f"trace: {trace_path}"]
    if open_hint:
        lines.append(f"open it in Perfetto: {open_command(trace_path)}")
    lines.append("")
    return "\n".join(lines)


_ARGUMENTS = {
    "capture": "(<captured inputs>)",
    "run": "(<the program's arguments>)",
    "attached": "(<the running job's own calls>)",
    "call-expression": "()",
    "directive": "()",
}


def _inputs_line(inputs: Inputs) -> list[str]:
    """Where a replay's or a run's inputs came from (nothing for a call expression)."""
    if inputs.source == "capture":
        age = age_text(inputs.captured_at)
        when = f", {age}" if age else ""
        return [f"   inputs: captured from a real call{when} ({inputs.path})"]
    if inputs.source == "attached":
        return ["   inputs: the running job's own calls (torchscope attach)"]
    if inputs.source == "run":
        saved = f", saved to {inputs.path}" if inputs.path else ""
        return [f"   inputs: the program's own arguments{saved}"]
    return []
