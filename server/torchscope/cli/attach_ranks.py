"""``torchscope attach --all-ranks PID --target FILE::QUALNAME``: the target's next calls on
every rank of PID's torchrun job at once, shown as ``analyze`` shows the ranks' traces (the
ranks table and the cross-rank findings, ``report/ranks.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from torchscope.cli.common import EXIT_FAILED, EXIT_OK, print_failure, progress_printer
from torchscope.protocol import to_builtins

if TYPE_CHECKING:
    from torchscope.source.targets import Target


async def attach_ranks(args: argparse.Namespace, target: Target) -> int:
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
