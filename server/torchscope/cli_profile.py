"""``torchscope profile FILE::FUNCTION``: profile in a worker, print the verdict and the trace."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from torchscope.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, job_options, print_failure
from torchscope.cli_compare import run_kind, run_sweep_command
from torchscope.cli_open import open_command, open_in_perfetto
from torchscope.cli_ranks import profile_ranks_command
from torchscope.host.profile_run import CliReport, ProfileFailure, ProfileOutcome, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import Hello, Output, Progress
from torchscope.report import render_report, source_with_margin
from torchscope.targets import Target, TargetError, function_named, parse_spec, read_source


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"[torchscope] {text}", file=sys.stderr, flush=True)


def _render_text(outcome: ProfileOutcome, listing: str, open_hint: bool = True) -> str:
    target = outcome.target
    trace_path = outcome.result.trace_path
    lines = [
        f"== {target.qualname} ({target.file}:{target.def_line})",
        f"   call: {outcome.call or target.qualname + '()'}",
        render_report(outcome.report),
    ]
    if outcome.report.lines:
        lines += ["", listing]
    elif outcome.result.attribution_note:
        lines += ["", outcome.result.attribution_note]
    lines += ["", f"trace: {trace_path}"]
    if open_hint:
        lines.append(f"open it in Perfetto: {open_command(trace_path)}")
    lines.append("")
    return "\n".join(lines)


def _print_outcome(args: argparse.Namespace, source: str, target: Target, job: CliReport) -> Path:
    """Print one job (as JSON or text); returns its trace."""
    outcome = job.profile
    for line in job.stderr:
        print(line, file=sys.stderr)
    if args.json:
        data = outcome.to_json()
        if job.key is not None and job.extra is not None:
            data[job.key] = job.extra()
        print(json.dumps(data, ensure_ascii=False), flush=True)
    else:
        listing = source_with_margin(source, target.first_line, target.end_line, outcome.report)
        text = _render_text(outcome, listing, not args.open)
        print(text + job.text, flush=True)
    return Path(outcome.result.trace_path)


async def run_profile_command(args: argparse.Namespace) -> int:
    try:
        path, qualname = parse_spec(args.target)
        source = read_source(path)
        target = function_named(source, str(path), qualname)
    except TargetError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    store = TraceStore(args.trace_dir.resolve() if args.trace_dir else None)
    profiler = Profiler(
        args.python,
        store,
        cwd=str(Path.cwd()),
        on_worker_stderr=lambda line: None if args.quiet else print(line, file=sys.stderr),
    )
    options = job_options(args, workspace_root=str(Path.cwd()))

    def on_progress(message: Progress) -> None:
        _say(args.quiet, f"{message.stage}: {message.message}")

    def on_output(message: Output) -> None:
        if not args.quiet:
            sys.stderr.write(message.text)

    if args.sweep:
        return await run_sweep_command(args, target, profiler, options, on_progress, on_output)

    status = EXIT_OK
    traces: list[Path] = []
    try:
        _say(args.quiet, f"starting a worker in {args.python}")
        hello = await profiler.hello()
        _say_hello(args, hello)
        for call, nproc in _calls(args, target, hello.cuda_available):
            _say(args.quiet, f"profiling {call or target.qualname + '()'}")
            if nproc > 1:  # on N ranks under torchrun (cli_ranks)
                status = max(status, await profile_ranks_command(args, target, call, nproc, hello))
                continue
            try:
                job = await run_kind(profiler, target, call, options, args, on_progress, on_output)
            except ProfileFailure as failure:
                status = EXIT_FAILED
                print_failure(target.file, failure)
                continue
            traces.append(_print_outcome(args, source, target, job))
    except ProfileFailure as failure:
        print(f"torchscope: {failure.message}", file=sys.stderr)
        status = EXIT_FAILED
    finally:
        await profiler.close()
    if args.open and not _open_all(args, traces):
        status = EXIT_FAILED
    return status


def _say_hello(args: argparse.Namespace, hello: Hello) -> None:
    devices = ", ".join(hello.device_names)
    torch = f"torch {hello.torch_version}, "
    _say(args.quiet, torch + (f"CUDA: {devices}" if hello.cuda_available else "CPU only"))


def _calls(args: argparse.Namespace, target: Target, cuda: bool) -> list[tuple[Optional[str], int]]:
    """``--call``, else every directive that applies here, else the bare function; each with
    its number of ranks (``--nproc``, else the directive's ``nproc=N``, else 1)."""
    if args.call:
        return [(args.call, args.nproc or 1)]
    found: list[tuple[Optional[str], int]] = [
        (d.call, args.nproc or d.nproc or 1) for d in target.applicable_directives(cuda)
    ]
    return found or [(None, args.nproc or 1)]


def _open_all(args: argparse.Namespace, traces: list[Path]) -> bool:
    """``--open``: one after the other, each served once (the link to stderr with --json)."""
    link_out = sys.stderr if args.json else sys.stdout
    opened = [
        open_in_perfetto(trace, args.perfetto_origin, args.open_timeout, link_out)
        for trace in traces
    ]
    return all(opened)
