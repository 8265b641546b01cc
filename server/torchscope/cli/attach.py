"""``torchscope attach PID --target FILE::QUALNAME [--calls N] [--json]``: profile a running
job's own next calls of a function through its agent (``host/attach_run.py``, docs/attach.md);
``attach PID --steps N``: its next N optimizer steps, as ``analyze`` shows a trace;
``--all-ranks``: every rank of the torchrun job PID belongs to, with the cross-rank view.

Progress goes to stderr; Ctrl-C cancels (the agent restores the function at once). Exit codes
are ``profile``'s: 0 profiled, 1 not (no agent, the target never called in time…), 2 for a bad
command line.
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
    print_failure,
    progress_printer,
    read_target,
    render_text,
)
from torchscope.protocol import to_builtins

if TYPE_CHECKING:
    from torchscope.cli.common import Commands
    from torchscope.host.attach_run import AttachPart
    from torchscope.source.targets import Target


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    attach = commands.add_parser(
        "attach",
        help="profile a function's next calls in a running job (its agent listening)",
        description="Ask the torchscope agent in process PID to time its next N calls of "
        "--target unprofiled, profile the N after them, and restore the function; or to "
        "profile its next --steps optimizer steps.",
    )
    attach.add_argument("pid", type=int, help="the job's process id (torchscope jobs)")
    what = attach.add_mutually_exclusive_group(required=True)
    what.add_argument("--target", metavar="FILE::QUALNAME", help="e.g. model.py::Net.forward")
    what.add_argument("--steps", type=int, metavar="N", help="profile the next N optimizer steps")
    attach.add_argument("--calls", type=int, default=5, help="calls timed, then profiled (5)")
    attach.add_argument(
        "--all-ranks", action="store_true", help="every rank of PID's torchrun job at once"
    )
    attach.add_argument("--timeout", type=float, default=300.0, help="seconds to wait (300)")
    attach.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    attach.add_argument("--json", action="store_true", help="print the result as JSON")
    attach.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return attach


def run(args: argparse.Namespace) -> int:
    import asyncio

    if args.calls < 1 or (args.steps is not None and args.steps < 1):
        print("torchscope: --calls and --steps take a positive number", file=sys.stderr)
        return EXIT_USAGE
    if args.steps is not None:
        return asyncio.run(_steps(args))
    found = read_target(args.target)
    if found is None:
        return EXIT_USAGE
    if args.all_ranks:
        return asyncio.run(_all_ranks(args, found[1]))
    return asyncio.run(_function(args, found[0], found[1]))


async def _function(args: argparse.Namespace, source: str, target: Target) -> int:
    from torchscope.host.attach_run import attach
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.trace_analysis import TraceAnalyzer
    from torchscope.host.trace_store import TraceStore

    analyzer = TraceAnalyzer()
    try:
        part = await attach(
            args.pid, target, args.calls, TraceStore(args.trace_dir), analyzer, args.timeout,
            progress_printer(args),
        )  # fmt: skip
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    finally:
        await analyzer.close()
    if args.json:
        print(json.dumps(to_builtins(part), ensure_ascii=False), flush=True)
        return EXIT_OK
    from torchscope.report import source_with_margin

    report = part.profile.report
    listing = source_with_margin(source, target.first_line, target.end_line, report)
    print(render_text(part.profile, listing) + attached_text(part), flush=True)
    return EXIT_OK


def attached_text(part: AttachPart) -> str:
    """The lines after the report: which job, and the calls' modes."""
    about = part.attached
    rank = f", rank {about.rank}" if about.rank is not None else ""
    return f"attached: pid {part.pid}{rank}: `{about.command}`\n{about.mode_note}\n"


async def _steps(args: argparse.Namespace) -> int:
    from torchscope.analysis import TraceError
    from torchscope.host.attach_run import attach_steps
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.trace_analysis import TraceAnalyzer
    from torchscope.host.trace_store import TraceStore
    from torchscope.report import render_report

    analyzer = TraceAnalyzer()
    try:
        result = await attach_steps(
            args.pid, args.steps, TraceStore(args.trace_dir), args.timeout, progress_printer(args)
        )
        report = await analyzer.analyze(result.profile.trace_path)
    except ProfileFailure as failure:
        return print_failure(f"pid {args.pid}", failure)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        await analyzer.close()
    trace = result.profile.trace_path
    if args.json:
        data = to_builtins(report)
        data.update(trace_path=trace, source="attached", pid=result.pid)
        print(json.dumps(data, ensure_ascii=False), flush=True)
    else:
        print(render_report(report))
        print(f"trace: {trace}\nattached: pid {result.pid}, {len(result.profiled)} steps")
    return EXIT_OK


async def _all_ranks(args: argparse.Namespace, target: Target) -> int:
    """``--all-ranks``: every rank of PID's torchrun job at once, shown as ``analyze`` shows
    the ranks' traces (the ranks table and the cross-rank findings, ``report/ranks.py``)."""
    from torchscope.analysis import TraceError, analyze_ranks
    from torchscope.host.attach_run import attach_ranks as attach_all
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.trace_store import TraceStore
    from torchscope.report.ranks import render_ranks

    store = TraceStore(args.trace_dir)
    try:
        jobs, results = await attach_all(
            args.pid, target, args.calls, store, args.timeout, progress_printer(args)
        )
        paths = [r.profile.trace_path for r in results]
        view = analyze_ranks(paths, measurements=[r.profile.measured for r in results])
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        data = to_builtins(view.shown)
        data.update(source="attached", pids=[j.pid for j in jobs], trace_path=" ".join(paths))
        print(json.dumps(data, ensure_ascii=False), flush=True)
        return EXIT_OK
    print(render_ranks(view))
    for job, path in zip(jobs, paths):
        print(f"trace (rank {job.rank}, pid {job.pid}): {path}")
    return EXIT_OK
