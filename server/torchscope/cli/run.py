"""``torchscope run --target FILE::QUALNAME -- ENTRY``: profile functions on the arguments a real
program passes them (``host/program_run.py``, docs/real-inputs.md).

Per target the ``profile`` report (text, or one ``--json`` object per target with ``run`` and
``inputs`` added), then how the program ended. Exit codes are ``profile``'s: 0 when every target
was profiled, 1 when one was not, 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchscope.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_job_options,
    add_option_flags,
    open_service,
    output_printer,
    print_failure,
    progress_printer,
    read_target,
    render_text,
    run_options,
    say,
)
from torchscope.protocol import RunOptions, to_builtins

if TYPE_CHECKING:
    from torchscope.cli.common import Commands
    from torchscope.host.program_run import RunOutcome, TargetRun
    from torchscope.source.targets import Target


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    run = commands.add_parser(
        "run",
        conflict_handler="resolve",  # its --mode (which calls) replaces the job options' --mode
        help="profile functions on the arguments a real program passes them",
        description="Run ENTRY (python script.py ARGS…, -m module ARGS… or pytest TEST) in a "
        "worker; when it calls a --target, time its first call (cold) and the next ones, then "
        "profile it on the real arguments and stop the program.",
    )
    run.add_argument(
        "--target",
        action="append",
        required=True,
        metavar="FILE::QUALNAME",
        help="a function to profile, e.g. model.py::Attention.forward (repeatable)",
    )
    add_job_options(run)
    # after the job options: RunOptions' --mode (which calls) replaces --compare-compile's
    add_option_flags(run, RunOptions)
    run.add_argument("--python", default=sys.executable, help="interpreter to run the program in")
    run.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    run.add_argument("--json", action="store_true", help="one JSON object per target")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    run.add_argument("entry", nargs=argparse.REMAINDER, help="-- python script.py ARGS…")
    return run


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(run_command(args))


def _read_targets(specs: list[str]) -> list[tuple[str, Target]] | None:
    found = []
    for spec in specs:
        target = read_target(spec)
        if target is None:
            return None
        found.append(target)
    return found


async def run_command(args: argparse.Namespace) -> int:
    from torchscope.host.profile_run import ProfileFailure

    targets = _read_targets(args.target)
    if targets is None:
        return EXIT_USAGE
    service = open_service(args)
    try:
        entry = service.entry(list(args.entry))
    except ValueError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        await service.close()  # no worker started yet
        return EXIT_USAGE
    say(args.quiet, f"running `{entry}` with {args.python}")
    on_progress, on_output = progress_printer(args), output_printer(args)
    try:
        outcome = await service.run_program(
            [t for _, t in targets], entry, run_options(args), None, None, on_progress, on_output
        )
    except ProfileFailure as failure:
        return print_failure(targets[0][1].file, failure)
    finally:
        await service.close()
    sources = {(t.file, t.qualname): source for source, t in targets}
    return _print_run(args, outcome, sources)


def _print_run(
    args: argparse.Namespace, outcome: RunOutcome, sources: dict[tuple[str, str], str]
) -> int:
    status = EXIT_OK
    for part in outcome.targets:
        if part.capture and part.capture.message:
            print(f"torchscope: {part.capture.message}", file=sys.stderr)
        if part.outcome is None:
            assert part.failure is not None
            status = print_failure(part.target.file, part.failure)
            continue
        if args.json:
            print(json.dumps(to_builtins(outcome.shown(part)), ensure_ascii=False), flush=True)
            continue
        from torchscope.report import source_with_margin

        target = part.target
        source = sources[(target.file, target.qualname)]
        listing = source_with_margin(
            source, target.first_line, target.end_line, part.outcome.report
        )
        print(render_text(part.outcome, listing) + _run_text(outcome, part), flush=True)
    return status if status == EXIT_OK else EXIT_FAILED


def _run_text(outcome: RunOutcome, part: TargetRun) -> str:
    from statistics import median

    from torchscope.analysis.formatting import format_duration
    from torchscope.host.call_modes import mode_label

    lines = [f"run: `{outcome.entry}` {outcome.exit}"]
    if outcome.exit_code is not None:
        lines[0] += f" (exit code {outcome.exit_code})"
    if outcome.error:  # after the profile: SystemExit's message or the exception, once
        lines[0] += f": {outcome.error}"
        lines += [outcome.traceback] if outcome.traceback else []
    if outcome.test is not None:
        lines.append(f"test: {outcome.test}")
    callers = ", ".join(f"{c['file']}:{c['line']} ({c['calls']})" for c in part.callers)
    lines.append(f"calls seen: {part.calls_seen}, from {callers}")
    if part.cold_us is not None:
        steady = (
            f", then median {format_duration(median(part.in_run_us))} over "
            f"{len(part.in_run_us)} calls"
            if part.in_run_us
            else ""
        )
        lines.append(f"in the run: first call {format_duration(part.cold_us)}{steady}")
    if part.timing_note:
        lines.append(part.timing_note)
    if part.mode_note or part.calls:
        lines.append(part.mode_note or f"profiled {mode_label(part.calls)}")
    return "\n".join(lines) + "\n"
