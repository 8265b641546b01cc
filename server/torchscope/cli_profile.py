"""``torchscope profile FILE::FUNCTION``: profile in a worker, print the verdict and the trace."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from torchscope.analysis import render_report
from torchscope.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from torchscope.host.profile_run import ProfileFailure, ProfileOptions, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import Output, Progress
from torchscope.targets import TargetError, function_named, parse_spec, read_source


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"[torchscope] {text}", file=sys.stderr, flush=True)


def _render_text(outcome_json: dict[str, object], report_text: str) -> str:
    target = outcome_json["target"]
    assert isinstance(target, dict)
    lines = [
        f"== {target['qualname']} ({target['file']}:{target['line']})",
        f"   call: {outcome_json['call'] or target['qualname'] + '()'}",
        report_text,
        f"trace: {outcome_json['trace_path']}",
        "",
    ]
    return "\n".join(lines)


async def run_profile_command(args: argparse.Namespace) -> int:
    try:
        path, qualname = parse_spec(args.target)
        target = function_named(read_source(path), str(path), qualname)
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
    options = ProfileOptions(
        steps=args.steps,
        warmup=args.warmup,
        timeout_s=args.timeout,
        device=args.device,
        workspace_root=str(Path.cwd()),
    )

    def on_progress(message: Progress) -> None:
        _say(args.quiet, f"{message.stage}: {message.message}")

    def on_output(message: Output) -> None:
        if not args.quiet:
            sys.stderr.write(message.text)

    status = EXIT_OK
    try:
        _say(args.quiet, f"starting a worker in {args.python}")
        hello = await profiler.hello()
        _say(
            args.quiet,
            f"torch {hello.torch_version}, "
            + (f"CUDA: {', '.join(hello.device_names)}" if hello.cuda_available else "CPU only"),
        )
        calls: list[Optional[str]]
        if args.call:
            calls = [args.call]
        else:
            directives = target.applicable_directives(hello.cuda_available)
            calls = [d.call for d in directives] or [None]
        for call in calls:
            _say(args.quiet, f"profiling {call or target.qualname + '()'}")
            try:
                outcome = await profiler.profile(target, call, options, on_progress, on_output)
            except ProfileFailure as failure:
                status = EXIT_FAILED
                where = f"{target.file}:{failure.line}" if failure.line else target.file
                print(f"torchscope: {where}: {failure.message}", file=sys.stderr)
                if failure.traceback:
                    print(failure.traceback, file=sys.stderr)
                continue
            data = outcome.to_json()
            if args.json:
                print(json.dumps(data, ensure_ascii=False), flush=True)
            else:
                print(_render_text(data, render_report(outcome.report)), flush=True)
    except ProfileFailure as failure:
        print(f"torchscope: {failure.message}", file=sys.stderr)
        status = EXIT_FAILED
    finally:
        await profiler.close()
    return status
