"""One side of a two-sided job (a comparison's eager and compiled runs, a diff's before and
after) as the ``ProfileResult`` the host analyses: the times the rounds took, the rest shared."""

from __future__ import annotations

import dataclasses
from typing import Optional

from torchscope.protocol import JobRequest, Measurements, Peaks, ProfileResult
from torchscope.worker.ab_rounds import Interleaved
from torchscope.worker.calibrate import torch_device_name


def side_result(
    request: JobRequest,
    use_cuda: bool,
    trace_path: str,
    times: tuple[float, list[float], float],
    def_line: int,
    peaks: Optional[Peaks] = None,
    attribution_note: str = "",
    rounds: Optional[tuple[Interleaved, int]] = None,
) -> ProfileResult:
    """``times``: the side's first call, its rounds (µs per call) and the dispatch floor;
    ``rounds``: the interleaved timing and this side's index in it (its waits for a CPU, the
    machine's load over the rounds and ``profile``'s stability line travel with it)."""
    import torch

    cold_us, call_us, floor_us = times
    device = "cuda" if use_cuda else "cpu"
    name = torch_device_name(device)
    measured = Measurements(cold_us, call_us, floor_us, device, name, peaks=peaks)
    if rounds is not None:
        timed, k = rounds
        measured = dataclasses.replace(
            measured,
            wait_us=timed.wait_us[k],
            machine=timed.machine,
            unstable=timed.unstable[k] if k < len(timed.unstable) else "",
            rounds_added=timed.rounds_added,
        )
    return ProfileResult(
        job_id=request.job_id,
        trace_path=trace_path,
        measured=measured,
        steps=request.options.steps,
        def_line=def_line,
        torch_version=torch.__version__,
        attribution_note=attribution_note,
    )
