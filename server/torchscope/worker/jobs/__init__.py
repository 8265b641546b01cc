"""The worker's job kinds: one module per kind in this package, listed in :func:`_handlers`.

Adding a kind is a request type in ``protocol.py``, its module here (a
``handler(request, send, cuda) -> reply``) and its line in :func:`_handlers`, as every family
of plugins is an explicit list; no other kind's code changes.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Callable

from torchscope.protocol import (
    CompareRequest,
    DiffRequest,
    JobError,
    JobRequest,
    Message,
    ProfileRequest,
    RunRequest,
)

Send = Callable[[Any], None]
Handler = Callable[[Any, Send, bool], Message]


@cache
def _handlers() -> dict[str, Handler]:
    """Request type → the worker side of its kind (the modules import torch: on first use)."""
    from . import compare, diff, profile, run

    return {
        ProfileRequest.TYPE: profile.run_profile,
        CompareRequest.TYPE: compare.run_compare,
        DiffRequest.TYPE: diff.run_diff,
        RunRequest.TYPE: run.run_program,
    }


def run_request(request: JobRequest, send: Send, cuda: bool) -> Message:
    """Run one job of any kind; a ``JobFailed`` propagates to the main loop."""
    handler = _handlers().get(request.TYPE)
    if handler is None:
        return JobError(request.job_id, "internal", f"this worker has no job kind {request.TYPE!r}")
    return handler(request, send, cuda)
