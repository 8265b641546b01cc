"""What an attach does inside the job: wrap the target where it lives (``run_hooks``'
``live_attribute`` and ``rewrapped``, the same hooks ``torchscope run`` patches with), time the
job's next ``calls`` calls unprofiled, profile the ``calls`` after them (the line-marked copy of
``worker/line_markers.py`` runs in their place, each call one ``ProfilerStep#N``; the analysis
reads those windows only, so what the job does between the calls is not counted), then put the
function back. The profiler is not paused between the calls: ``toggle_collection_dynamic``
would, but torch logs a warning on the job's stderr at every toggle. ``StepsCapture`` does the same
for the job's next optimizer steps (an optimizer step hook marks them).

The calls are the job's own, on its own arguments and in its own mode: nothing runs twice, so
the job's results do not change. Whatever fails in the agent's own code is recorded for the
reply and the call goes on unwrapped; an exception of the job's own code is the job's, raised
as it would be, and ends the capture. The waiting thread (``agent/requests.py``) exports the
trace and builds the reply, so the job does not wait for that.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.protocol import (
    AttachRequest,
    AttachResult,
    CallSeen,
    Inputs,
    JobError,
    Measurements,
    Message,
    ProfileResult,
    Progress,
)

_OURS = (str(Path(__file__).parents[1]) + os.sep, str(Path(__file__).resolve().parents[1]) + os.sep)


class AttachFailed(Exception):
    """The request cannot be served (``kind`` as ``JobError.kind``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Capture:
    """The part both kinds share: the profiler, progress for the client, the outcome."""

    name = ""

    def __init__(self, request: AttachRequest) -> None:
        import torch

        self.request = request
        self.torch = torch
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.error: Optional[JobError] = None
        self.prof: Any = None
        self.timed: list[CallSeen] = []
        self.profiled: list[CallSeen] = []
        self.cuda = False
        self._queue: list[Progress] = []
        self.floor_us = _dispatch_floor()

    def progress(self, stage: str, message: str) -> None:
        """Queued from the job's thread; the waiting thread sends it."""
        done = len(self.timed) + len(self.profiled)
        fraction = done / max(1, 2 * self.request.calls)
        self._queue.append(Progress(self.request.job_id, stage, message, fraction))

    def drain(self) -> list[Progress]:
        taken = self._queue[:]
        del self._queue[: len(taken)]
        return taken

    def fail(self, kind: str, message: str) -> None:
        """End the capture with ``message`` for the client (the job goes on)."""
        with self.lock:
            if self.error is None and not self.done.is_set():
                self.error = JobError(self.request.job_id, kind, message)
            self._stop()
        self.done.set()

    def cancel(self, reason: str) -> None:
        self.fail("cancelled", reason)

    def _start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        from torchscope.worker.profiling import quiet_profiler

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.cuda else [])
        self.prof = profile(activities=activities, record_shapes=True, with_flops=True)
        with quiet_profiler():
            self.prof.start()

    def _stop(self) -> None:
        """Stop the profiler (under ``lock``); its events are kept for the export."""
        if self.prof is not None and not getattr(self, "stopped", False):
            self.stopped = True
            self.prof.stop()

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def timeout_message(self, timeout_s: float) -> str:
        seen = len(self.timed) + len(self.profiled)
        return (
            f"{self.name} was called {seen} of {2 * self.request.calls} times within "
            f"{timeout_s:g} s; nothing was profiled and the function is restored — raise "
            "--timeout, or attach where the job calls it"
        )

    def reply(self) -> Message:
        """The result (the trace exported here, off the job's thread), or what failed."""
        if self.error is not None:
            return self.error
        from torchscope.worker.calibrate import torch_device_name
        from torchscope.worker.profiling import export_trace

        request = self.request
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        try:
            export_trace(self.prof, request.trace_path, f"{self.name} · pid {os.getpid()} · {when}")
        except Exception as exc:
            return JobError(request.job_id, "trace", f"the trace could not be written: {exc}")
        device = "cuda" if self.cuda else "cpu"
        timed = [c.us for c in self.timed]
        measured = Measurements(
            cold_us=timed[0],
            call_us=timed,
            dispatch_floor_us=self.floor_us,
            device_kind=device,
            device_name=torch_device_name(device),
            calls=len(timed),
            threads=int(self.torch.get_num_threads()),
        )
        result = ProfileResult(
            job_id=request.job_id,
            trace_path=request.trace_path,
            measured=measured,
            steps=len(self.profiled),
            def_line=self.def_line(),
            torch_version=str(self.torch.__version__),
            attribution_note=self.attribution_note(),
            inputs=Inputs("attached"),
        )
        return AttachResult(request.job_id, os.getpid(), result, self.timed, self.profiled)

    def def_line(self) -> int:
        return 0

    def attribution_note(self) -> str:
        return ""

    def install(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError


def _dispatch_floor() -> float:
    """µs of one trivial op on this machine, measured now (``worker/timing.py``'s)."""
    from torchscope.worker.timing import _floor_batch, _floor_op

    op = _floor_op()
    return sorted(_floor_batch(op) for _ in range(3))[1]


def skipped_dirs(torch: types.ModuleType) -> tuple[str, ...]:
    """Frames in these folders are not callers: torch's ``Module.__call__``, the agent,
    ``runpy`` (which ran the script)."""
    import runpy

    home = Path(str(torch.__file__)).parent
    found = (str(home) + os.sep, str(home.resolve()) + os.sep, *_OURS)
    return (*found, str(runpy.__file__), "<frozen runpy>")


def caller(skipped: tuple[str, ...], file: str) -> str:
    from torchscope.worker.call_modes import caller_of

    return caller_of(sys._getframe(2), skipped, file)


OnCall = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]
