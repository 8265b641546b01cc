"""``torchscope diff FILE::fn [--rev REV]``: did my edit make it faster?

The function as it is on disk and as it was at ``REV`` (default ``HEAD``) run in one worker,
timed in interleaved rounds; the verdict is ``faster``, ``slower`` or ``no-difference`` with a
confidence interval (docs/diff.md). The job options are the profile's (``add_job_options``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from torchscope.cli import (
    EXIT_OK,
    EXIT_USAGE,
    add_job_options,
    job_options,
    print_failure,
)

# The profiling machinery is imported where it runs: building the parser must stay cheap.
if TYPE_CHECKING:
    from torchscope.host.diff_run import DiffOutcome
    from torchscope.host.profile_run import Profiler
    from torchscope.targets import Target


def add_diff_parser(commands: Any) -> None:
    diff = commands.add_parser(
        "diff",
        help="did my edit make FILE::FUNCTION faster? (against a git revision)",
        description="Time FILE::FUNCTION as it is on disk against the same file at --rev, "
        "interleaved in one process, and say faster / slower / no-difference with a 95 %% "
        "interval. Exit 0 unless the comparison could not be made.",
    )
    diff.add_argument("target", help="FILE::QUALNAME, e.g. model.py::Model.forward")
    diff.add_argument("--rev", default="HEAD", help="the git revision to compare with (HEAD)")
    add_common_arguments(diff)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ``profile``, ``diff`` and ``check`` share, plus every job option (``--steps``,
    ``--timeout``…)."""
    parser.add_argument(
        "--call",
        help="call expression, e.g. 'fn(torch.randn(8, 8), w, b)' (default: the "
        "# torchscope: directive)",
    )
    add_job_options(parser)
    parser.add_argument("--python", default=sys.executable, help="interpreter to run the code in")
    parser.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def make_profiler(args: argparse.Namespace) -> Profiler:
    from torchscope.host.profile_run import Profiler
    from torchscope.host.trace_store import TraceStore

    store = TraceStore(args.trace_dir.resolve() if args.trace_dir else None)
    return Profiler(
        args.python,
        store,
        cwd=str(Path.cwd()),
        on_worker_stderr=lambda line: None if args.quiet else print(line, file=sys.stderr),
    )


async def diff_one(
    profiler: Profiler,
    args: argparse.Namespace,
    target: Target,
    call: Optional[str],
    rev: str,
    workspace_root: Optional[str] = None,
) -> DiffOutcome:
    """One comparison; raises ``GitError`` or ``ProfileFailure`` with the user's message."""
    from torchscope.host.diff_run import DiffJobKind
    from torchscope.host.git_source import source_at
    from torchscope.protocol import Progress

    before = source_at(Path(target.file), rev)

    def on_progress(message: Progress) -> None:
        if not args.quiet:
            print(f"[torchscope] {message.stage}: {message.message}", file=sys.stderr, flush=True)

    options = job_options(args, workspace_root or str(Path.cwd()))
    kind = DiffJobKind(before, rev)
    return await profiler.run_job(kind, target, call, options, on_progress)


async def run_diff_command(args: argparse.Namespace) -> int:
    from torchscope.host.git_source import GitError
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.report.diff import render_diff
    from torchscope.targets import TargetError, function_named, parse_spec, read_source

    try:
        path, qualname = parse_spec(args.target)
        target = function_named(read_source(path), str(path), qualname)
    except TargetError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    profiler = make_profiler(args)
    try:
        outcome = await diff_one(profiler, args, target, args.call, args.rev)
    except GitError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    finally:
        await profiler.close()
    if args.json:
        print(json.dumps(outcome.to_json(), ensure_ascii=False), flush=True)
    else:
        print(f"== {target.qualname} ({target.file}:{target.def_line}) against {args.rev}")
        print(render_diff(outcome.diff))
    return EXIT_OK
