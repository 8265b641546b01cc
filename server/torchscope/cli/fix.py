"""``torchscope fix FILE::fn --list | --try ID [--apply]``: measured fixes.

``--list`` names the fixes whose rewrite applies to the function, each with its assumption:
pure source work (``source/fixes/``) — no worker starts and torch is not imported, so a fix
that gains only on CUDA is listed as such and the device question is answered when it is
tried. ``--try ID`` rewrites a scratch copy, times it against the
original in one ``diff`` job with an output check (``host/fix_run.py``) and prints the
measured line and the patch; ``--apply`` writes the file only when the rewrite is faster with
the same outputs. Exit 0 when it applied or would apply, 1 otherwise, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from torchscope.cli.common import (
    EXIT_FAILED,
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
    from torchscope.host.session import JobService
    from torchscope.source.targets import Target


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    fix = commands.add_parser(
        "fix",
        help="list, measure and apply rewrites of FILE::FUNCTION (measured before applied)",
        description="--list: the fixes that apply to FILE::FUNCTION. --try ID: rewrite a "
        "scratch copy, time it against the original interleaved in one process, compare "
        "their outputs, and print the measured speed-up and the patch; --apply writes the "
        "file only when the rewrite is faster with the same outputs. Exit 0 when it applied "
        "or would apply, 1 otherwise.",
    )
    fix.add_argument("target", help="FILE::QUALNAME, e.g. model.py::Attention.forward")
    what = fix.add_mutually_exclusive_group(required=True)
    what.add_argument("--list", action="store_true", help="list the fixes that apply")
    what.add_argument("--try", dest="try_id", metavar="ID", help="measure one fix (an id)")
    fix.add_argument(
        "--apply", action="store_true", help="with --try: write the file if faster, same outputs"
    )
    add_common_arguments(fix)
    return fix


def run(args: argparse.Namespace) -> int:
    if args.apply and not args.try_id:
        print("torchscope: --apply goes with --try ID", file=sys.stderr)
        return EXIT_USAGE
    if args.list:  # the source only: no worker, no event loop
        found = read_target(args.target)
        return EXIT_USAGE if found is None else _list(args, *found)
    import asyncio

    return asyncio.run(run_fix_command(args))


async def run_fix_command(args: argparse.Namespace) -> int:
    found = read_target(args.target)
    if found is None:
        return EXIT_USAGE
    source, target = found
    if args.list:
        return _list(args, source, target)
    from torchscope.host.profile_run import ProfileFailure  # the worker's side: only for --try

    service = open_service(args)
    try:
        return await _try(service, args, target)
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    finally:
        await service.close()


def _list(args: argparse.Namespace, source: str, target: Target) -> int:
    """The source's fixes on the devices ``--device`` allows (both unless it names one)."""
    from torchscope.report.fix import render_fix_list
    from torchscope.source.fixes import offered_anywhere

    devices = ("cpu",) if args.device == "cpu" else ("cuda",) if args.device == "cuda" else None
    offers = offered_anywhere(source, target.qualname, devices)
    if args.json:
        rows = [
            {"id": f.id, "line": s.line, "title": f.title, "assumes": f.assumes, "devices": d}
            for f, s, d in offers
        ]
        print(json.dumps({"fixes": rows}, ensure_ascii=False), flush=True)
    else:
        print(render_fix_list(target.qualname, offers))
    return EXIT_OK


async def _try(service: JobService, args: argparse.Namespace, target: Target) -> int:
    from torchscope.host.fix_run import FixNotApplicable, apply_rewrite
    from torchscope.report.fix import render_trial
    from torchscope.source.fixes import ORDER, fix_by_id

    if fix_by_id(args.try_id) is None:
        known = ", ".join(i for i in ORDER if fix_by_id(i) is not None)
        print(f"torchscope: no fix {args.try_id!r} — fixes: {known}", file=sys.stderr)
        return EXIT_USAGE
    try:
        trial, rewrite = await service.try_fix(
            target, args.call, args.try_id, None, progress_printer(args)
        )
    except FixNotApplicable as exc:
        print(f"torchscope: {exc} (see --list)", file=sys.stderr)
        return EXIT_FAILED
    applied = args.apply and apply_rewrite(target, rewrite, trial)
    if args.json:
        print(
            json.dumps({**to_builtins(trial), "applied": applied}, ensure_ascii=False), flush=True
        )
    else:
        print(render_trial(trial, applied, args.apply))
    return EXIT_OK if trial.offered and (applied or not args.apply) else EXIT_FAILED
