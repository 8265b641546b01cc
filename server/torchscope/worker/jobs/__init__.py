"""The worker's job kinds: one module per kind in this package, found by its request type.

A kind's module registers its handler with ``@job_kind(ItsRequest)``; ``run_request`` imports
every module here once and dispatches on the request's ``TYPE``. Adding a kind is a request
type in ``protocol.py`` plus one module here: no other kind's code changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, TypeVar

from torchscope.protocol import JobError, JobRequest, Message

Send = Callable[[Any], None]
H = TypeVar("H", bound=Callable[..., Message])

_HANDLERS: dict[str, Callable[[Any, Send, bool], Message]] = {}


def job_kind(request_type: type[JobRequest]) -> Callable[[H], H]:
    """Register the decorated ``handler(request, send, cuda) -> reply`` as the worker side of
    ``request_type``'s kind."""

    def register(handler: H) -> H:
        _HANDLERS[request_type.TYPE] = handler
        return handler

    return register


def _load_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


def run_request(request: JobRequest, send: Send, cuda: bool) -> Message:
    """Run one job of any kind; a ``JobFailed`` propagates to the main loop."""
    if not _HANDLERS:
        _load_all()
    handler = _HANDLERS.get(request.TYPE)
    if handler is None:
        return JobError(request.job_id, "internal", f"this worker has no job kind {request.TYPE!r}")
    return handler(request, send, cuda)
