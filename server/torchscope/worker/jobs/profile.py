"""The ``profile`` job kind: the passes of ``worker/job.py`` (DESIGN.md §2)."""

from __future__ import annotations

from typing import Any, Callable

from torchscope.protocol import ProfileRequest, ProfileResult
from torchscope.worker.job import ProfileJob
from torchscope.worker.jobs import job_kind


@job_kind(ProfileRequest)
def run_profile(request: ProfileRequest, send: Callable[[Any], None], cuda: bool) -> ProfileResult:
    return ProfileJob(request, send, cuda).run()
