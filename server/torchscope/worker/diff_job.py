"""Before and after: the function on disk against an earlier version of its file, in one job.

Passes: setup (import today's file; load the earlier text under a private module name, so both
versions coexist; evaluate the same call expression for each, from the same random seed) →
cold call and warmup of each side → *timing*, both sides in interleaved rounds with no profiler
(``time_interleaved``, as the compile comparison: A B, B A, …, so a load spike on a shared
machine hits both alike) → a profile of each side, with line markers.

Nothing is compared with a number from another run: a stored baseline on a machine whose
speed swings by ±30 % between runs says nothing about one edit.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.protocol import DiffRequest, DiffResult, ProfileResult
from torchscope.worker.call_expression import (
    CallExpressionError,
    PreparedCall,
    direct_call,
    prepare_call,
)
from torchscope.worker.compile_compare import MAX_ROUNDS, time_interleaved
from torchscope.worker.job import ProfileJob, _cpu_name, _def_line
from torchscope.worker.loader import TargetNotFound, import_source, resolve_qualname

DIFF_STAGES = ("setup", "cold", "warmup", "timing", "profile", "profile-before")

SEED = 0
"""Both sides' call expressions are evaluated after ``torch.manual_seed(SEED)``: the same
random inputs for the earlier and the current version."""

_BEFORE_DIR: Optional[Path] = None


def _before_path(file: str, label: str) -> Path:
    """Where the earlier source is written: a private folder of this worker, named after the
    file and the revision (it shows up in tracebacks and in the trace)."""
    global _BEFORE_DIR
    if _BEFORE_DIR is None:
        _BEFORE_DIR = Path(tempfile.mkdtemp(prefix="torchscope-before-"))
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:40] or "before"
    return _BEFORE_DIR / f"{Path(file).stem}@{tag}.py"


class DiffJob(ProfileJob):
    """Today's side is this ``ProfileJob``; the earlier side is a second one over the private
    module, so both run the same passes (see the module docstring)."""

    request: DiffRequest
    stages = DIFF_STAGES

    def __init__(self, request: DiffRequest, send: Callable[[Any], None], cuda: bool) -> None:
        super().__init__(request, send, cuda)
        self.request = request
        before_request = dataclasses.replace(request, trace_path=request.before_trace_path)
        self.before = ProfileJob(before_request, send, cuda)

    def run_diff(self) -> DiffResult:
        request = self.request
        import torch

        torch.manual_seed(SEED)
        after, after_def = self._setup()
        before, before_def, before_file = self._setup_before()
        after_cold, after_estimate = self._cold_and_warm(after, side="current ")
        before_cold, before_estimate = self._cold_and_warm(before, side=f"{request.before_label} ")
        self._stage("timing", "timing both versions in alternating rounds")
        try:
            (before_us, after_us), floor_us = time_interleaved(
                [before.invoke, after.invoke],
                [before_estimate, after_estimate],
                max(request.timing_calls, MAX_ROUNDS),
                2 * request.timing_budget_s,
                self.use_cuda,
            )
        except Exception as exc:
            raise self._fail(
                "call-raised", f"a timed call raised {type(exc).__name__}: {exc}", exc
            ) from exc
        self._stage("profile", f"profiling {request.steps} calls of the current version")
        after_note = self._profile(after)
        self._stage("profile-before", f"profiling {request.steps} calls of {request.before_label}")
        before_note = self.before._profile(before)
        floor = statistics.median(floor_us)
        device_name = torch.cuda.get_device_name(0) if self.use_cuda else _cpu_name()
        common: dict[str, Any] = {
            "job_id": request.job_id,
            "dispatch_floor_us": floor,
            "device_kind": "cuda" if self.use_cuda else "cpu",
            "device_name": device_name,
            "steps": request.steps,
            "torch_version": torch.__version__,
        }
        after_result = ProfileResult(
            trace_path=request.trace_path,
            cold_us=after_cold * 1e6,
            call_us=after_us,
            def_line=after_def,
            attribution_note=after_note,
            **common,
        )
        before_result = ProfileResult(
            trace_path=request.before_trace_path,
            cold_us=before_cold * 1e6,
            call_us=before_us,
            def_line=before_def,
            attribution_note=before_note,
            **common,
        )
        return DiffResult(
            job_id=request.job_id,
            before=dataclasses.asdict(before_result),
            after=dataclasses.asdict(after_result),
            before_label=request.before_label,
            before_file=str(before_file),
        )

    def _setup_before(self) -> tuple[PreparedCall, int, Path]:
        """Load the earlier source beside today's module and evaluate the call in it."""
        request, label = self.request, self.request.before_label
        path = _before_path(request.file, label)
        private = f"_torchscope_before_{re.sub(r'[^A-Za-z0-9_]', '_', Path(request.file).stem)}"
        try:
            module = import_source(request.before_source, path, private, self.module)
        except (Exception, SystemExit) as exc:
            raise self._fail(
                "import",
                f"importing {Path(request.file).name} as it was at {label} raised "
                f"{type(exc).__name__}: {exc}",
                exc,
            ) from exc
        try:
            target = resolve_qualname(module, request.qualname)
        except TargetNotFound as exc:
            has = str(exc).split("(has:", 1)[-1].rstrip(")").strip()
            raise self._fail(
                "target-missing",
                f"{request.qualname} does not exist in {Path(request.file).name} at {label} "
                f"(it has: {has}): it is new, or was renamed or moved since — there is nothing "
                f"to compare it with; compare with a revision that has it (--rev)",
            ) from exc
        self.before.module, self.before.target = module, target
        import torch

        torch.manual_seed(SEED)
        if request.call:
            try:
                prepared = prepare_call(request.call, vars(module))
            except CallExpressionError as exc:
                raise self._fail(exc.kind, f"at {label}: {exc}", exc.__cause__) from exc
        else:
            prepared = direct_call(target, request.qualname)
        return prepared, _def_line(target), path


def run_diff(request: DiffRequest, send: Callable[[Any], None], cuda: bool) -> DiffResult:
    """Run one diff job; a ``JobFailed`` propagates to the main loop."""
    return DiffJob(request, send, cuda).run_diff()
