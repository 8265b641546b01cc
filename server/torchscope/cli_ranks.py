"""``torchscope analyze DIR``: the cross-rank view of a folder of per-rank traces."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from torchscope.cli_open import open_in_perfetto
from torchscope.host.profile_run import ProfileFailure
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import Hello
from torchscope.targets import Target


def analyze_folder_command(args: argparse.Namespace) -> int:
    """Print the cross-rank view of the folder ``args.trace`` (text or ``--json``); with
    ``--open``, open the slowest rank's trace. 0 on success, 1 when a trace cannot be read."""
    from torchscope.analysis import TraceError
    from torchscope.analysis.multi.ranks import analyze_folder
    from torchscope.report import render_report
    from torchscope.report.ranks import render_ranks

    folder: Path = args.trace
    as_json: bool = args.json

    try:
        view = analyze_folder(folder)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return 1
    if as_json:
        data = view.to_dict()
        data["trace_path"] = str(folder)
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(render_ranks(view))
        print()
        print(f"== rank {view.slowest} (the slowest) ==")
        print(render_report(view.reports[view.slowest]))
        for r in view.ranks:
            print(f"trace (rank {r.rank}): {r.trace_path}")
    if args.open:  # the slowest rank's trace; the link to stderr with --json
        slowest = Path(view.ranks[[r.rank for r in view.ranks].index(view.slowest)].trace_path)
        out = sys.stderr if as_json else sys.stdout
        return 0 if open_in_perfetto(slowest, args.perfetto_origin, args.open_timeout, out) else 1
    return 0


async def profile_ranks_command(
    args: argparse.Namespace,
    target: Target,
    call: Optional[str],
    nproc: int,
    hello: Hello,
) -> int:
    """``profile --nproc N``: run the ranks, print the cross-rank view (or ``--json``); 0 on
    success, 1 when a rank failed (its traceback on stderr)."""
    from torchscope.cli import job_options, print_failure
    from torchscope.host.rank_profile import profile_ranks, resolve_backend
    from torchscope.report import render_report
    from torchscope.report.ranks import render_ranks

    cuda_available = hello.cuda_available
    options = job_options(args, workspace_root=str(Path.cwd())).updated({"nproc": nproc})
    backend = resolve_backend(options, cuda_available)
    store = TraceStore(args.trace_dir.resolve() if args.trace_dir else None)

    def show(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    show(f"[torchscope] {nproc} ranks ({backend}) under torch.distributed.run")
    try:
        done = await profile_ranks(
            args.python, store, target, call, options, cuda_available, str(Path.cwd()), show
        )
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    if args.json:
        print(json.dumps(done.to_json(), ensure_ascii=False), flush=True)
        return 0
    view = done.view
    print(f"== {target.qualname} ({target.file}:{target.def_line}) on {nproc} ranks")
    print(f"   call: {call or target.qualname + '()'}")
    print(render_ranks(view))
    print()
    print(f"== rank {view.slowest} (the slowest) ==")
    print(render_report(view.reports[view.slowest]))
    print(f"\ntraces: {done.trace_dir}", flush=True)
    return 0
