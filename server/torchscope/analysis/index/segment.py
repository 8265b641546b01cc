"""Cut the trace into steps (one per call of the profiled function, or per training iteration).

Preference order, most explicit first:

1. ``ProfilerStep#N`` annotations, which ``prof.step()`` writes once per step (torchscope's
   own worker always produces these);
2. training-loop annotations: iterations end where ``Optimizer.step#…`` ends (torch's
   optimizer hooks write it in every loop that calls ``optimizer.step()``);
3. PARAM benchmark annotations ``[param|…|measure|…]`` (the measured passes; warmup passes
   are where CUDA lazy initialisation lives, so they are never picked when measured ones exist);
4. the whole trace as one step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...ingest import Span, Trace

_STEP_NUMBER = re.compile(r"#(\d+)$")

MIN_ITERATION_MARKERS = 2
"""Optimizer.step annotations needed before they are trusted as iteration boundaries."""


@dataclass(frozen=True)
class Step:
    """One analysed window of the trace."""

    index: int
    name: str
    start: float
    end: float
    source: str
    """``ProfilerStep``, ``Optimizer.step``, ``param`` or ``trace``: how it was found."""

    @property
    def wall_us(self) -> float:
        """The window's length."""
        return self.end - self.start


def _profiler_steps(trace: Trace) -> list[Step]:
    found = [a for a in trace.annotations if a.name.startswith("ProfilerStep#")]
    found.sort(key=lambda s: s.start)
    steps: list[Step] = []
    for a in found:
        if steps and a.start < steps[-1].end and a.name == steps[-1].name:
            continue  # duplicated export of the same step
        steps.append(Step(len(steps), a.name, a.start, a.end, "ProfilerStep"))
    return steps


def activity_window(trace: Trace) -> tuple[float, float] | None:
    """First start and last end of any recorded CPU or device activity."""
    lo, hi = float("inf"), float("-inf")
    for spans in (
        trace.ops,
        trace.annotations,
        trace.runtime,
        trace.kernels,
        trace.memcpys,
        trace.memsets,
        trace.python,
    ):
        for s in spans:
            if s.start < lo:
                lo = s.start
            if s.end > hi:
                hi = s.end
    if lo > hi:
        for s in trace.gpu_syncs + trace.profiler_ranges + trace.gpu_annotations:
            lo, hi = min(lo, s.start), max(hi, s.end)
    return (lo, hi) if lo <= hi else None


def _optimizer_iterations(trace: Trace, window: tuple[float, float]) -> list[Step]:
    ends = sorted(a.end for a in trace.annotations if a.name.startswith("Optimizer.step#"))
    if len(ends) < MIN_ITERATION_MARKERS:
        return []
    steps: list[Step] = []
    start = window[0]
    for end in ends:
        if end > start:
            steps.append(
                Step(len(steps), f"iteration {len(steps) + 1}", start, end, "Optimizer.step")
            )
            start = end
    return steps


def _outermost(spans: list[Span]) -> list[Span]:
    spans = sorted(spans, key=lambda s: (s.start, -s.end))
    out: list[Span] = []
    for s in spans:
        if out and s.end <= out[-1].end and s.track == out[-1].track:
            continue
        out.append(s)
    return out


def _param_passes(trace: Trace) -> list[Step]:
    for phase in ("|measure|", "|warmup|"):
        marked = [a for a in trace.annotations if a.name.startswith("[param|") and phase in a.name]
        if marked:
            return [
                Step(i, s.name, s.start, s.end, "param") for i, s in enumerate(_outermost(marked))
            ]
    return []


def _recording_end(trace: Trace) -> float:
    """End of the profiler's recording window (the ``Trace`` span), else of all activity."""
    if trace.trace_spans:
        return max(s.end for s in trace.trace_spans)
    window = activity_window(trace)
    return window[1] if window else float("inf")


def _clip(steps: list[Step], limit: float) -> list[Step]:
    """A step left open when recording stopped (hta_triton_kernel_a100's ProfilerStep#1
    claims 13 s in a 0.36 s recording) ends where the recording ended."""
    out: list[Step] = []
    for s in steps:
        if s.end > limit > s.start:
            s = Step(s.index, s.name, s.start, limit, s.source)
        out.append(s)
    return out


def find_steps(trace: Trace) -> list[Step]:
    """The steps to analyse, in time order (never empty for a trace with any activity)."""
    steps = _profiler_steps(trace)
    if steps:
        return _clip(steps, _recording_end(trace))
    window = activity_window(trace)
    if window is None:
        return []
    steps = _optimizer_iterations(trace, window) or _param_passes(trace)
    if steps:
        return steps
    return [Step(0, "whole trace", window[0], window[1], "trace")]


def step_number(step: Step) -> int | None:
    """N in ``ProfilerStep#N``; None for other kinds of step."""
    m = _STEP_NUMBER.search(step.name)
    return int(m.group(1)) if m and step.source == "ProfilerStep" else None
