"""The ``diff`` job kind: the function on disk against an earlier version of its file.

Passes: setup (import today's file; load the earlier text under a private module name, so both
versions coexist; evaluate the same call expression for each, from the same random seed) →
cold call and warmup of each side → *timing*, both sides in interleaved rounds with no profiler
(``time_interleaved``, as the compile comparison: A B, B A, …, so a load spike on a shared
machine hits both alike) → a profile of each side, with line markers.

The earlier text is written to a folder of this job, removed (with the private module) when
the job ends: nothing is left behind in the worker or on disk. Nothing is compared with a
number from another run: a stored baseline on a machine whose speed swings by ±30 % between
runs says nothing about one edit.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from torchscope.protocol import DiffRequest, DiffResult
from torchscope.worker.ab_rounds import Interleaved, time_interleaved
from torchscope.worker.call_expression import (
    PreparedCall,
)
from torchscope.worker.job import JobFailed, ProfileJob, def_line_of
from torchscope.worker.jobs.sides import side_result
from torchscope.worker.loader import TargetNotFound, resolve_qualname

DIFF_STAGES = ("setup", "check", "cold", "warmup", "timing", "profile", "profile-before")
"""``check`` runs only for a measured fix (``DiffRequest.check_outputs``)."""

SEED = 0
"""Both sides' call expressions are evaluated after ``torch.manual_seed(SEED)``: the same
random inputs for the earlier and the current version."""


def import_source(source: str, path: Path, private_name: str, like: ModuleType) -> ModuleType:
    """Import ``source`` (an earlier version of ``like``'s file, written to ``path``) as the
    module ``private_name``, beside ``like``: both versions coexist. Package-relative imports
    resolve as they do in ``like`` (to today's sibling modules)."""
    path.write_text(source, encoding="utf-8")
    sys.modules.pop(private_name, None)
    spec = importlib.util.spec_from_file_location(private_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    module.__package__ = like.__package__
    sys.modules[private_name] = module  # dataclasses and pickling look the module up
    spec.loader.exec_module(module)
    return module


class DiffJob(ProfileJob):
    """Today's side is this ``ProfileJob``; the earlier side is a second one over the private
    module, so both run the same passes (see the module docstring)."""

    request: DiffRequest
    stages = DIFF_STAGES

    def __init__(
        self, request: DiffRequest, send: Callable[[Any], None], cuda: bool, folder: Path
    ) -> None:
        super().__init__(request, send, cuda)
        self.request = request
        self.folder = folder
        stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(request.file).stem)
        self.private_name = f"_torchscope_before_{stem}"
        before_request = dataclasses.replace(request, trace_path=request.before_trace_path)
        self.before = ProfileJob(before_request, send, cuda)

    def run_diff(self) -> DiffResult:
        request = self.request
        import torch

        torch.manual_seed(SEED)
        after, after_def = self._setup()
        fallback = self._fallback_reason(after) if request.check_outputs else ""
        if fallback:  # a trial condition failed: the rewrite that does not assume it
            request.before_source = request.fallback_source
        try:
            before, before_def = self._setup_before()
        except JobFailed as failed:
            raise self._as_rewrite_failure(failed) from failed
        outputs = self._check_outputs(after, before) if request.check_outputs else {}
        if fallback:
            outputs["fallback"] = fallback
        if outputs.get("refusal"):  # a rewrite the check refused: no timing makes it right
            after_cold = before_cold = 0.0
            timed = Interleaved([[], []], [[], []], [0.0])
        else:
            after_cold, before_cold, timed = self._rounds(after, before)
        after_note, before_note = self._profiles(after, before)
        floor = statistics.median(timed.floor_us)
        after_result, before_result = (
            side_result(
                request,
                self.use_cuda,
                path,
                (cold * 1e6, timed.call_us[k], floor),
                line,
                None,
                note,
                (timed, k),
            )
            for path, cold, k, line, note in (
                (request.trace_path, after_cold, 1, after_def, after_note),
                (request.before_trace_path, before_cold, 0, before_def, before_note),
            )
        )
        return DiffResult(
            job_id=request.job_id,
            before=before_result,
            after=after_result,
            before_label=request.before_label,
            outputs=outputs,
        )

    def _rounds(
        self, after: PreparedCall, before: PreparedCall
    ) -> tuple[float, float, Interleaved]:
        """Each side's cold call and warmup, then the interleaved timing: the cold times and
        the rounds (side 0 the earlier version, side 1 today's)."""
        request, options = self.request, self.request.options
        after_cold, after_estimate = self._cold_and_warm(after, side="current ")
        before_cold, before_estimate = self._cold_and_warm(before, side=f"{request.before_label} ")
        self._stage("timing", "timing both versions in alternating rounds")
        try:
            timed = time_interleaved(
                [before.invoke, after.invoke],
                [before_estimate, after_estimate],
                options.timing_calls,
                options.timing_budget_s,
                self.use_cuda,
            )
        except Exception as exc:
            raise self._fail(
                "call-raised", f"a timed call raised {type(exc).__name__}: {exc}", exc
            ) from exc
        return after_cold, before_cold, timed

    def _profiles(self, after: PreparedCall, before: PreparedCall) -> tuple[str, str]:
        """The profile pass of each side (their attribution notes); none for a measured fix,
        which needs only the rounds."""
        request, steps = self.request, self.request.options.steps
        if request.check_outputs:
            skipped = "not profiled: a measured fix needs only the rounds"
            return skipped, skipped
        self._stage("profile", f"profiling {steps} calls of the current version")
        after_note = self._profile(after)
        self._stage("profile-before", f"profiling {steps} calls of {request.before_label}")
        return after_note, self.before._profile(before)

    def _as_rewrite_failure(self, failed: JobFailed) -> JobFailed:
        """For a measured fix, the earlier side is the rewrite: its failure is the fix's."""
        if not self.request.check_outputs:
            return failed
        return JobFailed(dataclasses.replace(failed.error, kind="rewrite-raised"))

    def _fallback_reason(self, original: PreparedCall) -> str:
        """Why the rewrite's trial conditions (``DiffRequest.trial_conditions``) do not hold
        for the original's objects, when it has a fallback; "" when they hold."""
        from torchscope.worker.trial_check import lower_triangular

        for condition in self.request.trial_conditions:
            if condition.get("kind") == "lower-triangular" and self.request.fallback_source:
                why = lower_triangular(original, condition["class"], condition["expr"])
                if why:
                    return f"measured with {condition.get('instead', 'the fallback')}: {why}"
        return ""

    def _call_side(self, prepared: PreparedCall, kind: str, what: str) -> Any:
        """One side's call from the seed, for the check (``worker/trial_check.py``)."""
        import torch

        from torchscope.worker.trial_check import Side

        torch.manual_seed(SEED)
        try:
            return Side(prepared, prepared.invoke(), torch.is_grad_enabled())
        except Exception as exc:
            raise self._fail(kind, f"{what} {type(exc).__name__}: {exc}", exc) from exc

    def _check_outputs(self, original: PreparedCall, rewrite: PreparedCall) -> dict[str, Any]:
        """Call each side once from the same seed and compare what the program depends on
        (``worker/trial_check.py``): outputs, autograd, state; then the fix's conditions."""
        import contextlib

        from torchscope.protocol import NO_EVIDENCE
        from torchscope.worker.trial_check import (
            compare_sides,
            dropout_off,
            no_grad_evidence,
        )

        self._stage("check", "calling the original and the rewrite once and comparing results")
        off = self.request.check_dropout_off
        with dropout_off([original, rewrite]) if off else contextlib.nullcontext():
            a = self._call_side(original, "call-raised", f"`{original.source}` raised")
            b = self._call_side(rewrite, "rewrite-raised", "the rewrite raised")
            check = compare_sides(a, b, off)
        for condition in self.request.trial_conditions:
            if condition.get("kind") == "no-grad":
                check.checks.append("no-grad evidence")
                reason = no_grad_evidence(a)
                if reason:
                    check.differ(NO_EVIDENCE, reason)
        return check.as_dict()

    def _setup_before(self) -> tuple[PreparedCall, int]:
        """Load the earlier source beside today's module and evaluate the call in it."""
        request, label = self.request, self.request.before_label
        tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:40] or "before"
        # Named after the file and the revision: it shows in tracebacks and in the trace.
        path = self.folder / f"{Path(request.file).stem}@{tag}.py"
        import torch

        # As today's side: seed, import, evaluate the call — so module-level random state
        # (a model built on import) and the call's inputs are the same on both sides.
        torch.manual_seed(SEED)
        try:
            module = import_source(request.before_source, path, self.private_name, self.module)
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
        # The same inputs as today's side: a capture, the call expression, or none.
        return self._arguments(module, target, f"at {label}: "), def_line_of(target)


def run_diff(request: DiffRequest, send: Callable[[Any], None], cuda: bool) -> DiffResult:
    """The ``diff`` job kind; a ``JobFailed`` propagates to the main loop. The earlier source's
    folder and private module go when the job ends, whatever its end."""
    folder = Path(tempfile.mkdtemp(prefix="torchscope-before-"))
    job = DiffJob(request, send, cuda, folder)
    try:
        return job.run_diff()
    finally:
        sys.modules.pop(job.private_name, None)
        shutil.rmtree(folder, ignore_errors=True)
