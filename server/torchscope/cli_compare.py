"""``torchscope profile … --compare-compile [--mode M]`` and ``… --sweep N=64,256,1024``.

``--compare-compile`` rides on the profile loop (each directive, or ``--call``, is profiled
eagerly and under ``torch.compile`` in one job; the eager report prints as usual, then the
side-by-side comparison). ``--sweep`` replaces the loop: one call template with a ``{N}``
placeholder, profiled at each size, printed as a table with the path of its SVG chart.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Callable, Optional

# The profiling machinery is imported where it runs: building the parser must stay cheap,
# because `torchscope analyze` builds it too and should not pay for asyncio and the host.
if TYPE_CHECKING:
    from torchscope.analysis.comparison import Comparison
    from torchscope.host.profile_run import ProfileOutcome, Profiler
    from torchscope.protocol import JobOptions, Output, Progress
    from torchscope.targets import Target

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _sweep_spec(text: str) -> tuple[str, list[int]]:
    from torchscope.host.sweep import SweepSpecError, parse_sweep

    try:
        return parse_sweep(text)
    except SweepSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--compare-compile",
        action="store_true",
        help="also run torch.compile(fn) in the same job and compare it with eager",
    )
    parser.add_argument(
        "--sweep",
        type=_sweep_spec,
        metavar="N=64,256,1024",
        help="profile at each size: the call expression's {N} placeholder takes each value",
    )


async def profile_or_compare(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    args: argparse.Namespace,
    on_progress: Callable[[Progress], None],
    on_output: Callable[[Output], None],
) -> tuple[ProfileOutcome, Optional[Comparison]]:
    """A plain profile, or with ``--compare-compile`` the eager profile and the comparison."""
    if not getattr(args, "compare_compile", False):
        from torchscope.host.profile_run import PROFILE

        return await profiler.run_job(PROFILE, target, call, options, on_progress, on_output), None
    from torchscope.host.compare_run import COMPARE

    outcome = await profiler.run_job(COMPARE, target, call, options, on_progress, on_output)
    error = outcome.compare.error
    if error:
        print(f"torchscope: {error.message}", file=sys.stderr)
        if outcome.compile_traceback and not args.quiet:
            print(outcome.compile_traceback, file=sys.stderr)
        print("torchscope: the eager profile is still reported", file=sys.stderr)
    return outcome.profile, outcome.compare


def compare_text(compare: Optional[Comparison]) -> str:
    if compare is None:
        return ""
    from torchscope.analysis.compare_render import render_comparison

    return render_comparison(compare) + "\n"


async def run_sweep_command(
    args: argparse.Namespace,
    target: Target,
    profiler: Profiler,
    options: JobOptions,
    on_progress: Callable[[Progress], None],
    on_output: Callable[[Output], None],
) -> int:
    """``--sweep``: profile at each size, print the table (or JSON) and the chart's path."""
    if args.compare_compile:
        print("torchscope: --sweep and --compare-compile cannot be combined", file=sys.stderr)
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
        where = f"{target.file}:{failure.line}" if failure.line else target.file
        print(f"torchscope: {where}: {failure.message}", file=sys.stderr)
        if failure.traceback:
            print(failure.traceback, file=sys.stderr)
        return EXIT_FAILED
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
