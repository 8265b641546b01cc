"""The profiled pass: ``torch.profiler`` over K calls, one ``ProfilerStep#N`` per call.

``schedule(wait=0, warmup=1, active=K, repeat=1)``: one extra call warms the profiler up and is
discarded; ``repeat=1`` matters, with ``repeat=0`` the events of a finished cycle are cleared.
The trace is exported as Chrome-trace JSON (gzip when the path ends in ``.gz``); the analysis
reads that file, never live profiler objects, so a trace from any machine reads the same.
"""

from __future__ import annotations

import os
from typing import Any, Callable


def profile_calls(invoke: Callable[[], Any], steps: int, use_cuda: bool, trace_path: str) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if use_cuda:
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
    ) as prof:
        for _ in range(steps + 1):
            invoke()
            prof.step()
    if use_cuda:
        torch.cuda.synchronize()
    os.makedirs(os.path.dirname(os.path.abspath(trace_path)), exist_ok=True)
    prof.export_chrome_trace(trace_path)
