"""The ``profile`` job kind: the passes of ``worker/job.py`` (DESIGN.md §2), then this
machine's peaks for the dtypes the profiled GEMMs used (``worker/calibrate.py``)."""

from __future__ import annotations

from typing import Any, Callable

from torchscope.protocol import ProfileRequest, ProfileResult
from torchscope.worker.job import ProfileJob


def run_profile(request: ProfileRequest, send: Callable[[Any], None], cuda: bool) -> ProfileResult:
    job = ProfileJob(request, send, cuda)
    result = job.run()
    return job.with_peaks(result)
