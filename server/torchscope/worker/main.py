"""The worker's main loop: say hello, then serve profile jobs until the host hangs up."""

from __future__ import annotations

import os
import platform
import sys
import traceback
from typing import Optional

from torchscope.protocol import (
    PROTOCOL_VERSION,
    WARM_STAGE,
    Hello,
    JobError,
    JobRequest,
    Progress,
    Shutdown,
)
from torchscope.worker import safety
from torchscope.worker.channel import Channel
from torchscope.worker.gpu_names import gpu_names

MIN_TORCH = (2, 1)


def _torch_status() -> tuple[Optional[str], bool, list[str], Optional[str]]:
    """torch's version, CUDA availability, device names, and an error if torch is unusable."""
    try:
        import torch
    except Exception as exc:
        return (
            None,
            False,
            [],
            (
                f"torch cannot be imported in {sys.executable} ({type(exc).__name__}: {exc}) — "
                f"install it there: {sys.executable} -m pip install torch"
            ),
        )
    version = torch.__version__
    try:
        major, minor = (int(p) for p in version.split("+")[0].split(".")[:2])
    except ValueError:
        major, minor = MIN_TORCH
    if (major, minor) < MIN_TORCH:
        return (
            version,
            False,
            [],
            (
                f"torch {version} in {sys.executable} is too old: torchscope needs torch >= "
                f"{MIN_TORCH[0]}.{MIN_TORCH[1]} — upgrade it: "
                f"{sys.executable} -m pip install -U torch"
            ),
        )
    cuda = bool(torch.cuda.is_available())  # asks the driver: no CUDA context, no lazy init
    return version, cuda, gpu_names() if cuda else [], None


def _warm_up_profiler() -> None:
    """Pay the CPU profiler's one-time start-up (≈0.6 s here: Kineto's set-up) now, while the
    user is still reading, instead of inside the first profile they ask for. CPU activity on a
    CPU tensor only: no GPU work until a job asks for CUDA (that job pays CUPTI's start-up
    and the GPU's calibration, once per process and per machine and device)."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        from torchscope.worker.profiling import quiet_profiler

        with quiet_profiler(), profile(activities=[ProfilerActivity.CPU], record_shapes=True):
            torch.add(torch.zeros(1), 1)
    except Exception as exc:  # not fatal: the first job will meet the same problem and say so
        print(f"[torchscope] profiler warm-up failed: {exc!r}", file=sys.stderr)


def main() -> None:
    channel = Channel.take_over_stdio()
    safety.install()
    torch_version, cuda, names, error = _torch_status()
    channel.send(
        Hello(
            protocol_version=PROTOCOL_VERSION,
            python_version=platform.python_version(),
            python_executable=sys.executable,
            torch_version=torch_version,
            cuda_available=cuda,
            device_names=names,
            pid=os.getpid(),
            error=error,
        )
    )
    if error:
        return
    _warm_up_profiler()
    channel.send(Progress(0, WARM_STAGE, "the worker is warm", 1.0))
    from torchscope.worker.job import JobFailed
    from torchscope.worker.jobs import run_request
    from torchscope.worker.output_capture import OutputForwarder

    while True:
        message = channel.receive()
        if message is None or isinstance(message, Shutdown):
            return
        if not isinstance(message, JobRequest):
            continue
        with OutputForwarder(message.job_id, channel.send):
            try:
                reply: object = run_request(message, channel.send, cuda)
            except JobFailed as failed:
                reply = failed.error
            except Exception as exc:  # a bug of ours: report it, keep serving
                reply = JobError(
                    message.job_id,
                    "internal",
                    f"torchscope worker error: {type(exc).__name__}: {exc}",
                    traceback=traceback.format_exc(),
                )
        channel.send(reply)  # type: ignore[arg-type]
