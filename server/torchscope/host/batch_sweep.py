"""What a sweep over a capture's batch dimension needs (``--sweep batch=1,8,32``; the loop is
``host/sweep.py``'s): the capture, the job that replays it at one batch size, and the sizes
around the captured one (``--sweep batch`` alone).

The worker does the resizing (``worker/batch_resize.py``): the request's ``inputs`` carry the
capture, ``batch`` (None: as captured) and ``batch_dim`` (``--batch-dim``; None: the worker
reads it from the model or the inputs), and come back with ``batch``, ``captured_batch``,
``batch_dim`` and ``batch_dim_from`` (how it was chosen) filled in, so each point's report names
its batch size.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

from torchscope.host.captures import capture_path, find_capture
from torchscope.host.profile_run import ProfileFailure, ProfileJobKind
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import Inputs, JobOptions, JobRequest, ProfileRequest
from torchscope.source.targets import Target

#: The reserved sweep name: ``--sweep batch=…`` replays the capture.
BATCH = "batch"


class CaptureAtBatch(ProfileJobKind):
    """A profile of the capture at one batch size (None: as captured)."""

    chooses_call = False  # the capture, whatever directive applies

    def __init__(
        self, capture: Inputs, batch: Optional[int], batch_dim: Optional[int] = None
    ) -> None:
        self.capture = capture
        self.batch = batch
        self.batch_dim = batch_dim
        """The batch dimension asked for (``--batch-dim``; None: the worker chooses)."""

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        inputs = replace(self.capture, batch=self.batch or 0, batch_dim=self.batch_dim)
        return ProfileRequest(**{**fields, "inputs": inputs})


def default_batches(captured: int) -> list[int]:
    """Sizes around the captured batch size: a quarter, half, itself, twice, four times."""
    smaller = {max(1, captured // 4), max(1, captured // 2)}
    return sorted(smaller | {captured, 2 * captured, 4 * captured})


def template(target: Target) -> str:
    """The sweep's ``call`` (what its table and JSON show)."""
    return f"{target.qualname}(<captured inputs at batch {{{BATCH}}}>)"


def batch_capture(target: Target, call: Optional[str], options: JobOptions) -> Inputs:
    """The capture to replay (``inputs`` of the requests); a clear failure without one, or when
    a call expression without ``{batch}`` was given as well."""
    if call and call.strip():
        raise ProfileFailure(
            "call-invalid",
            f"--sweep {BATCH} replays the capture of a real call: drop the call expression, or "
            f"write {{{BATCH}}} in it where the batch size goes to sweep the call instead",
            line=target.def_line,
        )
    capture = find_capture(options.workspace_root, target.file, target.qualname)
    if capture is None:
        where = capture_path(options.workspace_root, target.file, target.qualname)
        raise ProfileFailure(
            "call-missing",
            f"--sweep {BATCH} replays the capture of a real call of {target.qualname}, and "
            f"there is none ({where}): capture one first with torchscope run --target "
            f"{target.file}::{target.qualname} --capture -- python PROGRAM, or sweep a call "
            "expression with a {N} placeholder",
            line=target.def_line,
        )
    return capture
