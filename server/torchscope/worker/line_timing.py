"""Each line's CPU time without the profiler: what a line's share is computed from.

Under ``torch.profiler`` every recorded op and marker costs microseconds of the profiler's own
work, so a line of a few small ops looks several times slower than it is while a line of one
long op hardly changes: profiled shares overstate small lines. This pass runs the same
line-marked copy as the profiled pass, with the profiler off and each marker replaced by a
clock (``perf_counter_ns`` on entry and exit, ≈0.3 µs a statement): per call, each line's
*exclusive* time, i.e. its marker's time minus the markers nested inside it (the profiled
analysis's rule, ``analysis/measure/lines.py``). On CUDA the device is synchronised after each call,
never inside it, so a line's time stays what the CPU spent on it, as in the profile.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Literal

from torchscope.protocol import LINE_MARKER_PREFIX
from torchscope.worker.line_markers import markers_as


class LineClock:
    """A marker factory: ``clock("torchscope:L12")`` is a context manager timing line 12."""

    def __init__(self) -> None:
        self.exclusive_ns: dict[int, int] = {}
        self._nested_ns: list[int] = []  # per open marker: time of the markers inside it

    def __call__(self, name: str) -> _Span:
        return _Span(self, int(name[len(LINE_MARKER_PREFIX) :]))


class _Span:
    __slots__ = ("clock", "line", "start")

    def __init__(self, clock: LineClock, line: int) -> None:
        self.clock = clock
        self.line = line
        self.start = 0

    def __enter__(self) -> None:
        self.clock._nested_ns.append(0)
        self.start = time.perf_counter_ns()

    def __exit__(self, *exc: object) -> Literal[False]:
        total = time.perf_counter_ns() - self.start
        clock = self.clock
        nested = clock._nested_ns.pop()
        clock.exclusive_ns[self.line] = clock.exclusive_ns.get(self.line, 0) + total - nested
        if clock._nested_ns:
            clock._nested_ns[-1] += total
        return False  # exceptions, return, break and continue pass through


def _no_sync() -> None:
    return None


def time_lines(
    invoke: Callable[[], Any],
    target: Callable[..., Any],
    calls: int,
    use_cuda: bool,
) -> dict[int, list[float]]:
    """Exclusive µs of each line (keyed by its number) in each of ``calls`` calls of
    ``invoke``, which runs the marked copy of ``target``; a line that did not run in a call
    has 0 there."""
    synchronize: Callable[[], None] = _no_sync
    if use_cuda:
        import torch

        synchronize = torch.cuda.synchronize
    clock = LineClock()
    per_call: list[dict[int, int]] = []
    with markers_as(target, clock):
        for _ in range(calls):
            invoke()
            synchronize()
            per_call.append(clock.exclusive_ns)
            clock.exclusive_ns = {}
    lines = sorted({line for times in per_call for line in times})
    return {line: [times.get(line, 0) / 1e3 for times in per_call] for line in lines}
