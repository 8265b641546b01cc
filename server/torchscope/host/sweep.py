"""Profile one function at several input sizes (``--sweep N=64,256,1024``).

The call expression carries a placeholder (``{N}``) that is replaced by each size in turn; each
size is an ordinary profile job (same worker, fresh import), so every point has the meaning of
a single **Profile this function**. The result is a table, the crossover from overhead-bound to
compute-bound, and an SVG chart written next to the traces.

``--sweep batch=1,8,32`` without a call expression (``batch`` is reserved) replays the capture
of a real call (``torchscope run --capture``) at each batch size instead: the worker cuts or
repeats along dim 0 every tensor argument whose dim 0 is the captured batch size
(``worker/batch_resize.py``); ``--sweep batch`` alone takes sizes around the captured one.

A sweep is a host composite, not a job kind: a job kind is one request the worker answers, and
a sweep is several profile jobs (a size that times out or runs out of memory loses only its
own point, and the worker needs no message of its own); see docs/design-notes.md. Where the
jobs run is the ``Executor``: a ``Profiler`` (the worker) or the notebook's in-process one
(``notebook/executor.py``); the loop is this module's, once.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Union

from torchscope.analysis import (
    Sweep,
    SweepPoint,
    SweepStep,
    crossover,
    failed_point,
    point_from_report,
    sweep_step,
)
from torchscope.host import batch_sweep
from torchscope.host.batch_sweep import BATCH
from torchscope.host.profile_run import PROFILE, HostJob, ProfileFailure, ProfileOutcome, header
from torchscope.host.trace_store import TraceStore, newest_first
from torchscope.protocol import Hello, JobOptions, Output, Progress, json_as
from torchscope.report.sweep import render_sweep, step_lines
from torchscope.report.sweep_chart import sweep_svg
from torchscope.source.targets import Target

DEFAULT_SIZES = (16, 64, 256, 1024)

MAX_SIZES = 32

#: Failures that would repeat at every size: stop at the first instead of trying the rest.
FATAL_KINDS = frozenset(
    {"import", "target", "call-invalid", "call-missing", "settings", "worker", "capture"}
)


SVG_SUFFIX = ".sweep.svg"

_SPEC = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(.*?)\s*$")
_INT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


class SweepSpecError(ValueError):
    """``--sweep`` is not ``NAME=size,size,…`` with positive integer sizes."""


def parse_sweep(spec: str) -> tuple[str, list[int]]:
    """``"N=64,256,1024"`` → ``("N", [64, 256, 1024])`` (sorted, duplicates dropped);
    ``"batch"`` alone → ``("batch", [])``: sizes around the capture's own."""
    if spec.strip() == BATCH:
        return BATCH, []
    match = _SPEC.match(spec)
    if not match or not match.group(2):
        raise SweepSpecError(
            f"--sweep {spec!r}: write NAME=size,size,… e.g. N=64,256,1024,4096 (the call "
            "expression then uses {N}), or batch=1,8,32 to replay a capture at those batch sizes"
        )
    name, listed = match.group(1), match.group(2)
    sizes: set[int] = set()
    for part in listed.split(","):
        text = part.strip()
        if not text.isdigit() or int(text) < 1:
            raise SweepSpecError(f"--sweep {spec!r}: {text!r} is not a positive integer size")
        sizes.add(int(text))
    if len(sizes) > MAX_SIZES:
        raise SweepSpecError(f"--sweep {spec!r}: at most {MAX_SIZES} sizes")
    return name, sorted(sizes)


def placeholder(name: str) -> str:
    return "{" + name + "}"


def substitute(template: str, name: str, size: int) -> str:
    """The call for one size (plain text replacement: braces elsewhere are left alone)."""
    return template.replace(placeholder(name), str(size))


def suggest_template(call: str, name: str = "N") -> Optional[str]:
    """The call with its most frequent integer literal replaced by the placeholder, e.g.
    ``fn(torch.randn(8, 8), w)`` → ``fn(torch.randn({N}, {N}), w)``; None without one."""
    counts = Counter(_INT.findall(call))
    if not counts:
        return None
    literal, _ = max(counts.items(), key=lambda kv: (kv[1], int(kv[0])))
    return _INT.sub(lambda m: placeholder(name) if m.group(1) == literal else m.group(1), call)


def choose_template(target: Target, call: Optional[str], name: str, cuda: bool) -> str:
    """The call template: it must be given and hold the placeholder. (Not a ``# torchscope:``
    directive: every directive is also a plain profile's call, where ``{N}`` means nothing.)
    The error suggests a template made from the call or the first applicable directive."""
    mark = placeholder(name)
    if call and call.strip() and mark in call:
        return call.strip()
    directives = target.applicable_directives(cuda)
    base = call.strip() if call and call.strip() else (directives[0].call if directives else "")
    suggestion = suggest_template(base, name) if base else None
    example = suggestion or f"{target.name}(torch.randn({mark}, {mark}), …)"
    if call and call.strip():
        raise ProfileFailure(
            "call-invalid",
            f"the call expression has no {mark} placeholder for the sweep to fill, e.g. {example}",
            line=target.def_line,
        )
    raise ProfileFailure(
        "call-missing",
        f"a sweep needs a call expression with a {mark} placeholder where the size goes: "
        f"pass --call '{example}'",
        line=target.def_line,
    )


def _largest(outcomes: list[ProfileOutcome]) -> Optional[ProfileOutcome]:
    return outcomes[-1] if outcomes else None


@dataclass
class SweepOutcome:
    """Every size's profile and the sweep (the table's points, the crossover and the chart).
    ``to_builtins`` of it is the largest size's ``profile --json`` object plus ``sweep``."""

    target: Target = field(metadata=json_as(view=header, flatten=True))  # with no size profiled
    sweep: Sweep = field(metadata=json_as())
    outcomes: list[ProfileOutcome] = field(
        default_factory=list, metadata=json_as(view=_largest, flatten=True)
    )
    batch_dim_from: str = field(default="", metadata=json_as(skip=True))
    """How the worker chose the batch dimension (``lstm.batch_first=False``, ``--batch-dim``)."""

    @property
    def device(self) -> str:
        return self.outcomes[-1].report.device.kind if self.outcomes else "cpu"

    @property
    def points(self) -> list[SweepPoint]:
        return self.sweep.points

    def render(self) -> str:
        lines = [
            f"== {self.target.qualname} across {self.sweep.name} ({self.target.file}:"
            f"{self.target.def_line})",
            f"   call: {self.sweep.call}",
            *(
                [
                    f"   captured batch size: {self.sweep.captured_batch} "
                    f"(dim {self.sweep.batch_dim}: "
                    f"{self.batch_dim_from})"
                ]
                if self.sweep.captured_batch
                else []
            ),
            render_sweep(self.points, self.sweep.crossover, self.sweep.name, self.device),
            *(f"  {line}" for line in step_lines(self.sweep)),
        ]
        if self.sweep.chart_path:
            lines.append(f"chart: {self.sweep.chart_path}")
        return "\n".join(lines)


def write_chart(outcome: SweepOutcome, folder: Path, keep: int) -> Optional[str]:
    title = f"{outcome.target.qualname}: compute share across {outcome.sweep.name}"
    svg = sweep_svg(outcome.points, outcome.sweep.crossover, title, outcome.sweep.name)
    stem = re.sub(
        r"[^A-Za-z0-9_.-]+", "_", f"{Path(outcome.target.file).stem}.{outcome.target.qualname}"
    )
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
    path = folder / f"{stem[:80]}.{stamp}.{os.getpid()}{SVG_SUFFIX}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(svg, encoding="utf-8")
    except OSError:
        return None
    for old in newest_first(folder, SVG_SUFFIX)[max(1, keep) :]:
        with contextlib.suppress(OSError):
            old.unlink()
    return str(path)


Reported = Union[ProfileOutcome, str]  # a size's profile, or why it has none


class Executor(Protocol):
    """Where a sweep's profile jobs run: a ``Profiler`` (the worker) is one; the notebook's
    ``InProcessExecutor`` runs them in the caller's process. ``trace_store``: where the chart
    goes (beside the traces)."""

    trace_store: TraceStore

    async def hello(self) -> Hello: ...

    async def run_job(
        self,
        kind: HostJob[Any, ProfileOutcome],
        target: Target,
        call: Optional[str],
        options: JobOptions,
        on_progress: Optional[Callable[[Progress], None]] = None,
        on_output: Optional[Callable[[Output], None]] = None,
    ) -> ProfileOutcome: ...


async def _profile_at(
    profiler: Executor,
    kind: HostJob[Any, ProfileOutcome],
    target: Target,
    call: Optional[str],
    options: JobOptions,
    where: tuple[str, int, int],
    on_progress: Optional[Callable[[Progress], None]],
    on_output: Optional[Callable[[Output], None]],
) -> Reported:
    """One size's profile (``where``: its label, index and the number of sizes), or the
    message of a failure that loses only this size; a failure that would repeat at every size
    is raised."""
    label, k, total = where

    def progress(message: Progress) -> None:
        if on_progress is not None:
            on_progress(
                Progress(
                    message.job_id,
                    message.stage,
                    f"{label} ({k + 1}/{total}): {message.message}",
                    (k + message.fraction) / total,
                )
            )

    try:
        return await profiler.run_job(kind, target, call, options, progress, on_output)
    except ProfileFailure as failure:
        if failure.kind in FATAL_KINDS:
            raise
        return failure.message


def _steps(by_size: dict[int, Reported]) -> list[SweepStep]:
    """The A/B engine over each pair of adjacent sizes that both ran."""
    ran = [
        (n, done.result.measured)
        for n, done in sorted(by_size.items())
        if not isinstance(done, str)
    ]
    steps = (sweep_step(n, a, m, b) for (n, a), (m, b) in zip(ran, ran[1:]))
    return [step for step in steps if step is not None]


def _finish(
    profiler: Executor, target: Target, template: str, name: str, by_size: dict[int, Reported]
) -> SweepOutcome:
    """The points in size order, the crossover and the chart."""
    points: list[SweepPoint] = []
    outcomes: list[ProfileOutcome] = []
    for size in sorted(by_size):
        done = by_size[size]
        if isinstance(done, str):
            points.append(failed_point(size, done))
            continue
        outcomes.append(done)
        points.append(point_from_report(size, done.report, done.result.trace_path))
    result = SweepOutcome(target, Sweep(name, template, points, crossover(points)), outcomes)
    result.sweep.steps = _steps(by_size)
    folder = profiler.trace_store.folder
    if outcomes:
        folder = Path(outcomes[-1].result.trace_path).parent
    result.sweep.chart_path = write_chart(result, folder, profiler.trace_store.keep)
    return result


async def _batch_sweep(
    profiler: Executor,
    target: Target,
    call: Optional[str],
    sizes: list[int],
    options: JobOptions,
    on_progress: Optional[Callable[[Progress], None]],
    on_output: Optional[Callable[[Output], None]],
    batch_dim: Optional[int] = None,
) -> SweepOutcome:
    """The capture replayed at each batch size along ``batch_dim`` (None: the worker chooses);
    without sizes, at its own first (which says what it is), then around it."""
    capture = batch_sweep.batch_capture(target, call, options)
    by_size: dict[int, Reported] = {}
    todo, total = list(sizes), len(sizes) or 5
    if not todo:
        kind = batch_sweep.CaptureAtBatch(capture, None, batch_dim)
        where = (f"{BATCH} as captured", 0, total)
        first = await _profile_at(
            profiler, kind, target, None, options, where, on_progress, on_output
        )
        if isinstance(first, str):
            message = f"the capture could not be replayed at its own batch size: {first}"
            raise ProfileFailure("capture", message, target.def_line)
        captured = int(first.result.inputs.captured_batch or 0)
        by_size[captured] = first
        todo = [b for b in batch_sweep.default_batches(captured) if b != captured]
        total = len(todo) + 1
    for size in todo:
        kind = batch_sweep.CaptureAtBatch(capture, size, batch_dim)
        where = (f"{BATCH}={size}", len(by_size), total)
        by_size[size] = await _profile_at(
            profiler, kind, target, None, options, where, on_progress, on_output
        )
    result = _finish(profiler, target, batch_sweep.template(target), BATCH, by_size)
    for outcome in result.outcomes:
        result.sweep.captured_batch = outcome.result.inputs.captured_batch
        result.sweep.batch_dim = outcome.result.inputs.batch_dim
        result.batch_dim_from = outcome.result.inputs.batch_dim_from or ""
    return result


async def sweep(
    profiler: Executor,
    target: Target,
    call: Optional[str],
    name: str,
    sizes: list[int],
    options: JobOptions,
    on_progress: Optional[Callable[[Progress], None]] = None,
    on_output: Optional[Callable[[Output], None]] = None,
    batch_dim: Optional[int] = None,
) -> SweepOutcome:
    """Profile ``target`` at each size; a failing size becomes a failed point, unless the
    failure would repeat at every size (import, target, call expression), which is raised.
    ``batch`` with no ``{batch}`` in the call replays the capture at each batch size (along
    ``batch_dim``, ``--batch-dim``; None: read from the model or the inputs)."""
    if name == BATCH and placeholder(BATCH) not in (call or ""):
        return await _batch_sweep(
            profiler, target, call, sizes, options, on_progress, on_output, batch_dim
        )
    hello = await profiler.hello()
    template = choose_template(target, call, name, hello.cuda_available)
    sizes = sizes or list(DEFAULT_SIZES)
    by_size: dict[int, Reported] = {}
    for k, size in enumerate(sizes):
        by_size[size] = await _profile_at(
            profiler,
            PROFILE,
            target,
            substitute(template, name, size),
            options,
            (f"{name}={size}", k, len(sizes)),
            on_progress,
            on_output,
        )
    return _finish(profiler, target, template, name, by_size)
