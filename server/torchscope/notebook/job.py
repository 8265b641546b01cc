"""The worker's passes, run in this process on a call that is already prepared.

A worker job imports a file and evaluates a call expression (``ProfileJob._setup``); here the
function and its arguments are the caller's own objects (a notebook's cells, tensors already in
memory), so only ``_setup`` differs. Every pass after it — cold call, warmup, timing without the
profiler, profiled steps with line markers, the calibration — is ``worker/job.py``'s,
``worker/jobs/compare.py``'s and ``worker/calibrate.py``'s own code.

No process boundary: a crash takes the caller with it, ``timeout_s`` and ``max_memory`` do not
apply, and Ctrl-C (``KeyboardInterrupt``) unwinds through the passes' ``with`` blocks, which
stop the profiler. ``profiler_stopped`` checks that none is left running anyway.
"""

from __future__ import annotations

import inspect
import itertools
import types
from dataclasses import dataclass
from typing import Any, Callable, Optional

from torchscope.protocol import CompareRequest, JobRequest, ProfileRequest, ProfileResult
from torchscope.worker.call_expression import PreparedCall
from torchscope.worker.job import ProfileJob, def_line_of
from torchscope.worker.jobs.compare import CompareJob
from torchscope.worker.loader import unwrap

_job_ids = itertools.count(1)


def next_job_id() -> int:
    return next(_job_ids)


@dataclass
class CallTarget:
    """What the line markers instrument for one prepared call: the function, a namespace the
    marked copy can be patched into (``worker/attribution.py``'s indirect case) and its name."""

    function: Any
    namespace: types.ModuleType
    qualname: str
    file: str


def call_target(func: Any) -> CallTarget:
    """The function a call runs: ``fn`` itself, a bound method's function, a module's
    ``forward`` (``model(x)``), else the callable's class ``__call__``."""
    inner = unwrap(func)
    owner: Any = None
    if isinstance(inner, types.MethodType):
        receiver = inner.__self__
        owner, inner = (receiver if isinstance(receiver, type) else type(receiver)), inner.__func__
    elif not isinstance(inner, types.FunctionType):
        owner = type(inner)
        method: Any = getattr(owner, "forward", None) or owner.__call__
        inner = method if method is not None else inner
    qualname = getattr(inner, "__qualname__", getattr(inner, "__name__", "call"))
    namespace = types.ModuleType("torchscope_in_process")
    if owner is not None and "." in qualname and "<locals>" not in qualname:
        setattr(namespace, qualname.split(".")[0], owner)
    code = getattr(unwrap(inner), "__code__", None)
    file = code.co_filename if code is not None else inspect.getfile(type(inner))
    return CallTarget(inner, namespace, qualname, file)


class InProcessSetup:
    """``_setup`` for a prepared call (mixed into the worker's job classes)."""

    prepared: PreparedCall
    call_target: CallTarget

    def _setup(self) -> tuple[PreparedCall, int]:
        job: Any = self
        job._check_device()
        job.module = self.call_target.namespace
        job.target = self.call_target.function
        return self.prepared, def_line_of(self.call_target.function)


def _request(
    kind: type[JobRequest], target: CallTarget, source: str, trace_path: str, **fields: Any
) -> Any:
    return kind(
        job_id=next_job_id(),
        file=target.file,
        qualname=target.qualname,
        call=source,
        trace_path=trace_path,
        **fields,
    )


class InProcessProfileJob(InProcessSetup, ProfileJob):
    """``ProfileJob``'s passes on a prepared call."""

    def __init__(
        self,
        prepared: PreparedCall,
        target: CallTarget,
        request: ProfileRequest,
        send: Callable[[Any], None],
        cuda: bool,
    ) -> None:
        super().__init__(request, send, cuda)
        self.prepared, self.call_target = prepared, target

    def run_with_peaks(self) -> ProfileResult:
        """What the worker's ``profile`` job kind answers (``worker/jobs/profile.py``)."""
        return self.with_peaks(self.run())


class InProcessCompareJob(InProcessSetup, CompareJob):
    """``CompareJob``'s passes (eager and ``torch.compile``) on a prepared call."""

    def __init__(
        self,
        prepared: PreparedCall,
        target: CallTarget,
        request: CompareRequest,
        send: Callable[[Any], None],
        cuda: bool,
    ) -> None:
        super().__init__(request, send, cuda)
        self.prepared, self.call_target = prepared, target


def profile_request(
    target: CallTarget, source: str, trace_path: str, options: Any
) -> ProfileRequest:
    return _request(ProfileRequest, target, source, trace_path, options=options)  # type: ignore[no-any-return]


def compare_request(
    target: CallTarget, source: str, trace_path: str, compiled_path: str, options: Any
) -> CompareRequest:
    return _request(  # type: ignore[no-any-return]
        CompareRequest,
        target,
        source,
        trace_path,
        options=options,
        compiled_trace_path=compiled_path,
    )


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def profiler_running() -> bool:
    """Whether a ``torch.profiler`` (Kineto or the legacy one) is still on in this process."""
    import torch

    enabled: Optional[Callable[[], bool]] = getattr(torch.autograd, "_profiler_enabled", None)
    return bool(enabled()) if enabled is not None else False
