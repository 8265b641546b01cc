"""``torchscope profile … --compare-compile [--mode M]`` and ``… --sweep N=64,256,1024``.

A job kind's flag (``CLI_FLAG`` of its request in ``protocol.JOB_KINDS``, e.g.
``--compare-compile``) rides on the profile loop: each directive, or ``--call``, runs as that
kind (``common.run_kind``), and ``profile.cli_report`` says what prints, rendered by ``report/``
(for a comparison: the eager report as usual, then the side-by-side comparison). A new kind
needs no edit here, only its rendering there.
``--sweep`` replaces the loop (``main`` runs this module's ``run`` for ``profile --sweep``):
one call template with a ``{N}`` placeholder, or a capture at each batch size (``--sweep
batch=…``), profiled at each size, printed as a table with the path of its SVG chart.
"""

from __future__ import annotations

import argparse
import json
import sys

from torchscope.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    chosen_kinds,
    open_service,
    output_printer,
    print_failure,
    progress_printer,
    read_target,
)
from torchscope.flags import add_compare_arguments as add_compare_arguments
from torchscope.protocol import to_builtins


def run(args: argparse.Namespace) -> int:
    """``profile --sweep``."""
    import asyncio

    return asyncio.run(run_sweep_command(args))


async def run_sweep_command(args: argparse.Namespace) -> int:
    """Profile at each size, print the table (or JSON) and the chart's path."""
    found = read_target(args.target)
    if found is None:
        return EXIT_USAGE
    target = found[1]
    service = open_service(args)
    for flag, _ in chosen_kinds(args):
        print(f"torchscope: --sweep and {flag} cannot be combined", file=sys.stderr)
    batch_dim = getattr(args, "batch_dim", None)
    bad_dim = batch_dim is not None and (batch_dim < 0 or args.sweep[0] != "batch")
    if bad_dim:
        print("torchscope: --batch-dim N takes N >= 0, with --sweep batch", file=sys.stderr)
    if chosen_kinds(args) or bad_dim:
        await service.close()
        return EXIT_USAGE
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.sweep import sweep

    name, sizes = args.sweep
    try:
        outcome = await sweep(
            service.profiler,
            target,
            args.call,
            name,
            sizes,
            service.defaults,
            progress_printer(args),
            output_printer(args),
            batch_dim,
        )
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    finally:
        await service.close()
    if args.json:
        print(json.dumps(to_builtins(outcome), ensure_ascii=False), flush=True)
    else:
        print(outcome.render(), flush=True)
    failed = [p for p in outcome.points if p.error is not None]
    for p in failed:
        print(f"torchscope: {name}={p.n}: {p.error}", file=sys.stderr)
    return EXIT_FAILED if failed and len(failed) == len(outcome.points) else EXIT_OK
