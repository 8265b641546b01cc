"""``torchscope profile FILE::FUNCTION``: profile in a worker, print the verdict and the trace."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

from torchscope.analysis import format_duration, render_report
from torchscope.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from torchscope.cli_compare import compare_text, profile_or_compare, run_sweep_command
from torchscope.cli_open import open_command, open_in_perfetto
from torchscope.host.profile_run import ProfileFailure, ProfileOptions, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import Output, Progress
from torchscope.targets import Target, TargetError, function_named, parse_spec, read_source


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(f"[torchscope] {text}", file=sys.stderr, flush=True)


def source_with_margin(source: str, target: Target, report: dict[str, Any]) -> str:
    """The function's source with each line's share and time per call in a left margin."""
    by_line = {line["line"]: line for line in report.get("lines", [])}
    gpu = report.get("device", {}).get("kind") == "cuda"
    rows = []
    for number in range(target.first_line, target.end_line + 1):
        code = source.splitlines()[number - 1] if number <= len(source.splitlines()) else ""
        stats = by_line.get(number)
        margin = ""
        if stats is not None:
            margin = f"{stats['share'] * 100:3.0f}% {format_duration(stats['cpu_us']):>8}"
            if gpu:
                margin += f" {format_duration(stats['device_us']):>8}"
        width = 23 if gpu else 14
        rows.append(f"{margin:>{width}} {number:4d} │ {code}")
    header = "per line (share · CPU" + (" · GPU" if gpu else "") + " per call):"
    return "\n".join([header, *rows])


def _render_text(
    data: dict[str, Any], report_text: str, listing: str, open_hint: bool = True
) -> str:
    target = data["target"]
    lines = [
        f"== {target['qualname']} ({target['file']}:{target['line']})",
        f"   call: {data['call'] or target['qualname'] + '()'}",
        report_text,
    ]
    if data.get("lines"):
        lines += ["", listing]
    elif data.get("attribution_note"):
        lines += ["", data["attribution_note"]]
    lines += ["", f"trace: {data['trace_path']}"]
    if open_hint:
        lines.append(f"open it in Perfetto: {open_command(data['trace_path'])}")
    lines.append("")
    return "\n".join(lines)


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
    options = ProfileOptions(
        steps=args.steps,
        warmup=args.warmup,
        timeout_s=args.timeout,
        device=args.device,
        with_stack=args.with_stack,
        workspace_root=str(Path.cwd()),
    )
    if args.max_memory is not None:
        options.max_memory = args.max_memory

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
                outcome, compare = await profile_or_compare(
                    profiler, target, call, options, args, on_progress, on_output
                )
            except ProfileFailure as failure:
                status = EXIT_FAILED
                where = f"{target.file}:{failure.line}" if failure.line else target.file
                print(f"torchscope: {where}: {failure.message}", file=sys.stderr)
                if failure.traceback:
                    print(failure.traceback, file=sys.stderr)
                continue
            data = outcome.to_json()
            if compare is not None:
                data["compare"] = compare
            traces.append(Path(data["trace_path"]))
            if args.json:
                print(json.dumps(data, ensure_ascii=False), flush=True)
            else:
                listing = source_with_margin(source, target, data)
                text = _render_text(data, render_report(outcome.report), listing, not args.open)
                print(text + compare_text(compare), flush=True)
    except ProfileFailure as failure:
        print(f"torchscope: {failure.message}", file=sys.stderr)
        status = EXIT_FAILED
    finally:
        await profiler.close()
    if args.open:  # one after the other, each served once (the link to stderr with --json)
        link_out = sys.stderr if args.json else sys.stdout
        for trace in traces:
            if not open_in_perfetto(trace, args.perfetto_origin, args.open_timeout, link_out):
                status = EXIT_FAILED
    return status
