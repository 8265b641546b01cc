"""``torchscope profile … --compare-compile [--mode M]`` and ``… --sweep N=64,256,1024``.

A job kind's flag (``CLI_FLAG`` of its request in ``protocol.JOB_KINDS``, e.g.
``--compare-compile``) rides on the profile loop: each directive, or ``--call``, runs as that
kind, and its ``HostJob.cli_report`` says what prints (for a comparison: the eager report as
usual, then the side-by-side comparison). A new kind needs no edit here. ``--sweep`` replaces
the loop: one call template with a ``{N}`` placeholder, profiled at each size, printed as a
table with the path of its SVG chart.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Callable, Optional

# The profiling machinery is imported where it runs: building the parser must stay cheap,
# because `torchscope analyze` builds it too and should not pay for asyncio and the host.
if TYPE_CHECKING:
    from torchscope.host.profile_run import CliReport, Profiler
    from torchscope.protocol import JobOptions, Output, Progress
    from torchscope.targets import Target

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _sweep_spec(text: str) -> tuple[str, list[int]]:
    from torchscope.host.sweep import SweepSpecError, parse_sweep

    try:
        return parse_sweep(text)
    except SweepSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _flag_kinds() -> list[tuple[str, str]]:
    """``(flag, kind)`` for every job kind the CLI can run instead of a plain profile."""
    from torchscope.protocol import JOB_KINDS

    return [(r.CLI_FLAG, kind) for kind, r in JOB_KINDS.items() if r.CLI_FLAG]


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """A flag per job kind that declares one (``--compare-compile``), and ``--sweep``."""
    from torchscope.protocol import JOB_KINDS

    for flag, kind in _flag_kinds():
        parser.add_argument(flag, action="store_true", help=JOB_KINDS[kind].CLI_HELP)
    parser.add_argument(
        "--sweep",
        type=_sweep_spec,
        metavar="N=64,256,1024",
        help="profile at each size: the call expression's {N} placeholder takes each value",
    )


def chosen_kinds(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The ``(flag, kind)`` pairs given on the command line."""
    return [(flag, kind) for flag, kind in _flag_kinds() if getattr(args, _dest(flag), False)]


async def run_kind(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    args: argparse.Namespace,
    on_progress: Callable[[Progress], None],
    on_output: Callable[[Output], None],
) -> CliReport:
    """A plain profile, or the job kind whose flag was given (``--compare-compile``)."""
    from torchscope.host.job_kinds import host_kinds
    from torchscope.protocol import ProfileRequest

    chosen = chosen_kinds(args)
    kind = host_kinds()[chosen[0][1] if chosen else ProfileRequest.TYPE]
    outcome = await profiler.run_job(kind, target, call, options, on_progress, on_output)
    return kind.cli_report(outcome, verbose=not args.quiet)


async def run_sweep_command(
    args: argparse.Namespace,
    target: Target,
    profiler: Profiler,
    options: JobOptions,
    on_progress: Callable[[Progress], None],
    on_output: Callable[[Output], None],
) -> int:
    """``--sweep``: profile at each size, print the table (or JSON) and the chart's path."""
    for flag, _ in chosen_kinds(args):
        print(f"torchscope: --sweep and {flag} cannot be combined", file=sys.stderr)
    if chosen_kinds(args):
        await profiler.close()
        return EXIT_USAGE
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.sweep import sweep

    name, sizes = args.sweep
    try:
        outcome = await sweep(
            profiler, target, args.call, name, sizes, options, on_progress, on_output
        )
    except ProfileFailure as failure:
        from torchscope.cli import print_failure  # cli imports this module

        return print_failure(target.file, failure)
    finally:
        await profiler.close()
    if args.json:
        print(json.dumps(outcome.to_json(), ensure_ascii=False), flush=True)
    else:
        print(outcome.render(), flush=True)
    failed = [p for p in outcome.points if p.error is not None]
    for p in failed:
        print(f"torchscope: {name}={p.n}: {p.error}", file=sys.stderr)
    return EXIT_FAILED if failed and len(failed) == len(outcome.points) else EXIT_OK
