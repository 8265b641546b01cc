"""``torchscope diff FILE::fn [--rev REV]``: did my edit make it faster?

The function as it is on disk and as it was at ``REV`` (default ``HEAD``) run in one worker,
timed in interleaved rounds; the verdict is ``faster``, ``slower`` or ``no-difference`` with a
confidence interval (docs/diff.md). The job options are the profile's (``add_job_options``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from torchscope.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    add_common_arguments,
    open_service,
    print_failure,
    progress_printer,
    read_target,
)
from torchscope.protocol import to_builtins

if TYPE_CHECKING:
    from torchscope.cli.common import Commands


def add_parser(commands: Commands) -> argparse.ArgumentParser:
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
    return diff


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(run_diff_command(args))


async def run_diff_command(args: argparse.Namespace) -> int:
    from torchscope.host.git_source import GitError
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.report.diff import render_diff

    found = read_target(args.target)
    if found is None:
        return EXIT_USAGE
    target = found[1]
    service = open_service(args)
    try:
        outcome = await service.diff(target, args.call, args.rev, None, progress_printer(args))
    except GitError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    finally:
        await service.close()
    if args.json:
        print(json.dumps(to_builtins(outcome), ensure_ascii=False), flush=True)
    else:
        print(f"== {target.qualname} ({target.file}:{target.def_line}) against {args.rev}")
        print(render_diff(outcome.diff))
    return EXIT_OK
