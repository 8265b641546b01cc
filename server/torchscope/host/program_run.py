"""The host side of ``torchscope run``: run a program in the worker, profile the targets on the
arguments it passes them (``worker/jobs/run.py``), and analyse each target's trace as
``profile`` does.

The program runs under the same isolation as every job (``Profiler.run_job``: the worker's
marker, guardian, memory limit, timeout, output cap), in a worker that is closed afterwards
(the program leaves the process changed). Each target's outcome is a ``ProfileOutcome`` plus
the run's ``run`` and ``inputs`` objects (``RunOutcome.shown``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.analysis import TraceError
from torchscope.host.captures import capture_path, write_origin
from torchscope.host.profile_run import (
    HostJob,
    ProfileFailure,
    ProfileOutcome,
    Profiler,
    with_fixes,
)
from torchscope.host.trace_analysis import Analyse, analyse_here
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import (
    CallSeen,
    Capture,
    JobError,
    JobOptions,
    JobRequest,
    Output,
    Progress,
    RunOptions,
    RunRequest,
    RunResult,
    RunTarget,
    json_as,
)
from torchscope.source.targets import Target


@dataclass(frozen=True)
class Entry:
    """The program: ``kind`` "script" | "module" | "pytest", what to run, its arguments."""

    kind: str
    target: str
    args: tuple[str, ...] = ()

    def __str__(self) -> str:
        head = {"script": ["python", self.target], "module": ["python", "-m", self.target]}
        words = head.get(self.kind, ["pytest"]) + list(self.args)
        return shlex.join(words)

    @property
    def program(self) -> str:
        """The short name: ``train.py``, ``pkg.train``, ``test_x.py`` (a pytest entry's first
        path) or ``pytest``."""
        if self.kind == "script":
            return Path(self.target).name
        if self.kind == "module":
            return self.target
        paths = [a for a in self.args if not a.startswith("-")]
        return Path(paths[0].split("::")[0]).name if paths else "pytest"


def parse_entry(words: list[str], cwd: Optional[Path] = None) -> Entry:
    """``python script.py args…``, ``-m module args…`` or ``pytest args…`` (``python -m
    pytest`` too), a script's path relative to ``cwd`` (default: this process's); ValueError
    says what is accepted."""
    if words and words[0] == "--":
        words = words[1:]
    if words and Path(words[0]).name.startswith("python") and not words[0].endswith(".py"):
        words = words[1:]
    if words[:2] == ["-m", "pytest"] or words[:1] in (["pytest"], ["py.test"]):
        return Entry("pytest", "pytest", tuple(words[2:] if words[0] == "-m" else words[1:]))
    if words[:1] == ["-m"] and len(words) >= 2:
        return Entry("module", words[1], tuple(words[2:]))
    if words and words[0].endswith(".py"):
        if not (Path(cwd or Path.cwd()) / words[0]).is_file():
            raise ValueError(f"{words[0]}: no such script — check the path")
        return Entry("script", words[0], tuple(words[1:]))
    raise ValueError(
        "give the program after --: python script.py ARGS…, -m module ARGS… or "
        "pytest tests/test_x.py::test_y"
    )


@dataclass
class TargetRun:
    """One target's part of a run: its profile or why there is none, and its calls."""

    target: Target
    calls_seen: int
    callers: list[dict[str, Any]]
    cold_us: Optional[float]
    in_run_us: list[float]
    capture: Optional[Capture]
    outcome: Optional[ProfileOutcome] = None
    failure: Optional[ProfileFailure] = None
    calls: list[CallSeen] = field(default_factory=list)
    """The calls timed and profiled."""
    other_calls: list[CallSeen] = field(default_factory=list)
    """Calls seen in another mode than the profiled ones (the same fields)."""
    mode: str = "any"
    """The ``--mode`` passed (``any``: none)."""

    @property
    def mode_note(self) -> str:
        """What the calls' modes say (``host/call_modes.py``; "" when nothing to say)."""
        from torchscope.host.call_modes import mode_note

        return mode_note(self.calls, self.other_calls, self.mode)

    @property
    def timing_note(self) -> str:
        """Why the timed calls and the program's own differ, when they do beyond the noise
        (``host/run_numbers.py``; "" otherwise or without a profile)."""
        from torchscope.host.run_numbers import timing_note

        if self.outcome is None or self.outcome.report.timing is None:
            return ""
        timing = self.outcome.report.timing
        return timing_note(
            self.calls, self.in_run_us, timing.median_us, timing.spread, timing.wait_us,
            self.outcome.result.measured,
        )  # fmt: skip


@dataclass
class RunOutcome:
    entry: Entry
    exit: str
    exit_code: Optional[int]
    error: str
    test: Optional[str]
    stderr_tail: list[str]
    targets: list[TargetRun] = field(default_factory=list)
    mode: str = "any"
    traceback: str = ""
    """The program's uncaught exception's traceback, its own frames only ("" if none)."""

    def shown(self, part: TargetRun) -> RunPart:
        """``profile --json``'s object for ``part`` plus ``run`` (its ``inputs`` say "run")."""
        assert part.outcome is not None
        run = RunInfo(
            str(self.entry), self.exit, self.exit_code, self.test, part.calls_seen, part.callers,
            part.cold_us, part.in_run_us, part.calls, part.other_calls, self.mode,
            part.mode_note, part.capture, part.timing_note,
        )  # fmt: skip
        return RunPart(part.outcome, run)


@dataclass(frozen=True)
class RunInfo:
    """The ``run`` object of ``torchscope run --json``: how the program ended and what it did
    with the target."""

    entry: str
    exit: str
    exit_code: Optional[int]
    test: Optional[str]
    calls_seen: int
    callers: list[dict[str, Any]]
    cold_us: Optional[float]
    in_run_us: list[float]
    calls: list[CallSeen]
    other_calls: list[CallSeen]
    mode: str
    mode_note: str
    capture: Optional[Capture]
    timing_note: str = ""
    """Why the timed calls and the program's own took other times, when they differ beyond
    the noise (``host/run_numbers.py``); "" when they agree."""


@dataclass(frozen=True)
class RunPart:
    """One target's ``torchscope run --json`` object: its profile's, plus ``run``."""

    profile: ProfileOutcome = field(metadata=json_as(flatten=True))
    run: RunInfo = field(metadata=json_as())


def _callers(raw: list[tuple[str, int, int]], cwd: Path) -> list[dict[str, Any]]:
    found = []
    for file, line, calls in raw:
        try:
            shown = str(Path(file).resolve().relative_to(cwd))
        except ValueError:
            shown = str(file)
        found.append({"file": shown, "line": int(line), "calls": int(calls)})
    return found


class RunJobKind(HostJob[RunResult, RunOutcome]):
    kind = RunRequest.TYPE
    reply_type = RunResult
    fresh_worker_after = True
    chooses_call = False

    def __init__(
        self,
        targets: list[Target],
        entry: Entry,
        run: RunOptions,
        cwd: str = "",
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.targets = targets
        self.env = dict(env or {})  # a launch configuration's (``HostJob.env``)
        self.cwd = cwd  # the program's working directory ("": the worker's, the workspace root)
        self.entry = entry
        self.run = run
        self.mode = run.mode  # ``--mode``: one of ``protocol.RUN_MODES``

    def request(self, fields: dict[str, Any], target: Target, store: TraceStore) -> JobRequest:
        workspace = fields["options"].workspace_root
        targets = [
            RunTarget(
                str(Path(t.file).resolve()),
                t.qualname,
                fields["trace_path"] if i == 0 else str(store.new_path(t.file, t.qualname)),
                str(capture_path(workspace, t.file, t.qualname)) if self.run.capture else "",
            )
            for i, t in enumerate(self.targets)
        ]
        return RunRequest(
            **fields,
            entry_kind=self.entry.kind,
            entry_target=self.entry.target,
            entry_args=list(self.entry.args),
            targets=targets,
            calls=self.run.calls,
            let_finish=self.run.let_finish,
            capture_limit=self.run.capture_bytes,
            cwd=self.cwd,
            mode=self.run.mode,
        )

    def outcome(
        self,
        target: Target,
        call: Optional[str],
        reply: RunResult,
        output: list[str],
        analyse: Analyse = analyse_here,
    ) -> RunOutcome:
        done = RunOutcome(
            self.entry, reply.exit, reply.exit_code, reply.error, reply.test, reply.stderr_tail
        )
        done.mode, done.traceback = self.mode, reply.traceback
        for spec, raw in zip(self.targets, reply.targets):
            if raw.capture and raw.capture.written:
                write_origin(Path(raw.capture.path), str(self.entry), self.entry.program)
            part = TargetRun(
                spec,
                raw.calls_seen,
                _callers(raw.callers, Path.cwd()),
                raw.cold_us,
                list(raw.in_run_us),
                raw.capture,
                calls=list(raw.calls),
                other_calls=list(raw.other_calls),
                mode=self.mode,
            )
            if raw.profile is not None:
                result = raw.profile
                try:
                    report = analyse(result.trace_path, result.measured, False).report
                except TraceError as exc:
                    part.failure = ProfileFailure("analysis", str(exc), spec.def_line)
                else:
                    report = with_fixes(report, spec, result)
                    part.outcome = ProfileOutcome(spec, None, result, report, output)
            elif raw.error is not None:
                part.failure = self._failed(done, raw.error)
            else:
                part.failure = self._not_called(done, part, raw.loaded)
            done.targets.append(part)
        return done

    def _failed(self, done: RunOutcome, error: JobError) -> ProfileFailure:
        """The target's error; one that the target raised in the program says how the program
        ended too, in the same sentence, with the traceback once."""
        message, shown = error.message, error.traceback
        if error.kind == "call-raised":
            code = f" with exit code {done.exit_code}" if done.exit_code is not None else ""
            message += f"; the program `{self.entry}` {done.exit}{code}"
            last = shown.strip().splitlines()[-1:] if shown else []
            if last and done.traceback.strip().splitlines()[-1:] == last:
                shown = done.traceback  # the same exception, with the program's frames above
        return ProfileFailure(error.kind, message, error.line, shown)

    def _not_called(self, done: RunOutcome, part: TargetRun, loaded: bool) -> ProfileFailure:
        """Why a target has no profile: the program never loaded its file, never called it, or
        never in the ``--mode`` asked for."""
        spec, how = part.target, done.exit
        code = f" with exit code {done.exit_code}" if done.exit_code is not None else ""
        said = f" ({done.error})" if done.error else ""
        if not loaded:
            message = (
                f"the program `{self.entry}` {how}{code}{said} without loading {spec.file}, "
                f"so {spec.qualname} was never found in its code — is it the file the program "
                "imports (not a copy elsewhere on sys.path)?"
            )
        elif part.calls_seen:
            from torchscope.host.call_modes import mode_label

            message = (
                f"the program `{self.entry}` {how}{code}{said} after {part.calls_seen} calls of "
                f"{spec.qualname}, none of them a {self.mode} call ({mode_label(part.other_calls)}"
                " seen) — drop --mode (any), or run the part of the program that makes them"
            )
        else:
            message = f"the program `{self.entry}` {how}{code}{said} before calling {spec.qualname}"
        tail = _news(done.stderr_tail, message + "\n" + done.traceback)
        if tail:
            message += "; its last stderr lines:\n" + "\n".join(tail)
        return ProfileFailure("not-called", message, spec.def_line, done.traceback)


def _news(tail: list[str], told: str) -> list[str]:
    """The program's last stderr lines worth quoting: none already in ``told`` (the message,
    the traceback shown with it)."""
    return [line for line in tail if line.strip() and line.strip() not in told]


async def run_program(
    profiler: Profiler,
    kind: RunJobKind,
    options: JobOptions,
    on_progress: Optional[Callable[[Progress], None]] = None,
    on_output: Optional[Callable[[Output], None]] = None,
) -> RunOutcome:
    """Run ``kind``'s program; a timeout before the first call says so."""
    seen: list[str] = []

    def progress(message: Progress) -> None:
        if message.stage == "called":
            seen.append(message.message)
        if on_progress is not None:
            on_progress(message)

    target = kind.targets[0]
    try:
        return await profiler.run_job(kind, target, None, options, progress, on_output)
    except ProfileFailure as failure:
        if failure.kind == "timeout" and not seen:
            names = ", ".join(t.qualname for t in kind.targets)
            raise ProfileFailure(
                "timeout",
                f"the program `{kind.entry}` did not call {names} within {options.timeout_s:g} s "
                "and was stopped, with every process it started — raise --timeout, or run a "
                "program that reaches the target sooner",
                target.def_line,
            ) from failure
        raise
