"""``torchscope analyze TRACE``: the report of a trace file written by torch.profiler;
``torchscope analyze DIR|GLOB|TRACE...``: the cross-rank view of per-rank traces (a folder of
them, globs, several files), on a local process pool or, with ``--scheduler ADDRESS``,
``--scheduler-file PATH`` or ``$DASK_SCHEDULER_ADDRESS``, on a Dask cluster.

A single trace imports the analysis and nothing of the host, the worker, the language server
or asyncio (``tests/unit/test_cli_imports.py``); ``--open`` imports the trace server; Dask is
imported only when a scheduler is named.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from torchscope.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_open_arguments,
    open_command,
    open_in_perfetto,
)
from torchscope.protocol import to_builtins

if TYPE_CHECKING:
    from collections.abc import Sequence

    from torchscope.analysis import RanksReport
    from torchscope.analysis.results import Report
    from torchscope.cli.common import Commands

#: Where ``dask``/``distributed`` themselves read the scheduler's address.
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    analyze = commands.add_parser(
        "analyze",
        help="analyse a trace file written by torch.profiler, or a folder of per-rank traces",
    )
    analyze.add_argument(
        "trace",
        nargs="+",
        metavar="TRACE",
        help="a Chrome-trace .json or .json.gz; or per-rank ones: a folder of them, globs "
        "(quoted: 'job/rank*.json.gz'), several files",
    )
    analyze.add_argument("--json", action="store_true", help="print the report as JSON")
    analyze.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="say on stderr which trace reader runs (and what the pure-Python one costs)",
    )
    analyze.add_argument(
        "--steps",
        metavar="FIRST-LAST",
        help="analyse only ProfilerStep#FIRST..#LAST (e.g. 10-20): for traces too large to "
        "analyse whole",
    )
    cluster = analyze.add_mutually_exclusive_group()
    cluster.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="analyse per-rank traces on this Dask scheduler, one task per trace (e.g. "
        f"tcp://host:8786; default ${SCHEDULER_ENV}, else a local process pool); needs "
        'pip install "torchscope[cluster]"',
    )
    cluster.add_argument(
        "--scheduler-file",
        metavar="PATH",
        help="the same, with the scheduler that `dask scheduler --scheduler-file PATH` wrote",
    )
    add_open_arguments(analyze)
    return analyze


def parse_steps(text: str) -> tuple[int, int]:
    """``--steps``: ``"10-20"`` → ``(10, 20)``; ``"7"`` → ``(7, 7)``."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if m is None:
        raise ValueError(f"{text!r} is not a step range; write FIRST-LAST, e.g. 10-20")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if last < first:
        raise ValueError(f"{text!r}: the last step comes before the first; write e.g. 10-20")
    return first, last


def _analyze_steps(trace: Path, steps: str) -> Report:
    from torchscope.analysis import LocalMachine, TraceError
    from torchscope.analysis.engine import analyze
    from torchscope.ingest import load_trace

    try:
        first_last = parse_steps(steps)
    except ValueError as exc:
        raise TraceError(f"--steps {exc}") from None
    return analyze(load_trace(trace, steps=first_last), local=LocalMachine.read())


def _open(trace: Path, args: argparse.Namespace, link_out: TextIO) -> int:
    opened = open_in_perfetto(trace, args.perfetto_origin, args.open_timeout, link_out)
    return EXIT_OK if opened else EXIT_FAILED


def run(args: argparse.Namespace) -> int:
    from torchscope.analysis import LocalMachine, TraceError, analyze_trace
    from torchscope.report import render_report

    if args.verbose:
        _say_reader()
    items: list[str] = args.trace
    if len(items) > 1 or Path(items[0]).is_dir() or _is_glob(items[0]):
        return analyze_ranks_command(args)
    trace = Path(items[0])
    as_json: bool = args.json
    try:
        steps = args.steps
        if steps is None:
            report = analyze_trace(trace, local=LocalMachine.read())
        else:
            report = _analyze_steps(trace, steps)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        data = to_builtins(report)
        data["trace_path"] = str(trace)
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(render_report(report))
        print(f"trace: {trace}")
        if not args.open:
            print(f"open it in Perfetto: {open_command(str(trace))}")
    if args.open:  # the link goes to stderr with --json, so stdout stays one JSON object
        return _open(trace, args, sys.stderr if as_json else sys.stdout)
    return EXIT_OK


def _say_reader() -> None:
    """``-v``: which trace reader this command runs, once (the pure-Python one with its cost)."""
    from torchscope.ingest import accel

    note = accel.reader_note()
    print(f"torchscope: {note or 'trace reader: native (C)'}", file=sys.stderr)


def _is_glob(item: str) -> bool:
    return glob.has_magic(item) and not Path(item).exists()


def _cluster(args: argparse.Namespace) -> tuple[str | None, str | None] | None:
    """``(address, scheduler file)`` of the Dask scheduler named, None for the local pool."""
    if args.scheduler_file:
        return None, args.scheduler_file
    address = args.scheduler or os.environ.get(SCHEDULER_ENV, "").strip()
    return (address, None) if address else None


def _ranks_view(items: Sequence[str], cluster: tuple[str | None, str | None] | None) -> RanksReport:
    from torchscope.analysis import analyze_ranks, rank_paths

    paths = rank_paths(items)
    if cluster is None:
        return analyze_ranks(paths)
    from torchscope.analysis import analyze_ranks_on, connect_cluster

    with connect_cluster(*cluster) as client:
        return analyze_ranks_on(client, paths)


def analyze_ranks_command(args: argparse.Namespace) -> int:
    """Print the cross-rank view of the traces ``args.trace`` names (text or ``--json``); with
    ``--open``, open the slowest rank's trace. 0 on success, 1 when a trace cannot be read or
    the Dask cluster cannot be used."""
    from torchscope.analysis import TraceError
    from torchscope.report import render_report
    from torchscope.report.ranks import render_ranks

    if args.verbose:
        _say_reader()
    items: list[str] = args.trace
    as_json: bool = args.json
    cluster = _cluster(args)
    failures: tuple[type[Exception], ...] = (TraceError,)
    if cluster is not None:
        from torchscope.analysis import ClusterError

        failures = (TraceError, ClusterError)
    try:
        view = _ranks_view(items, cluster)
    except failures as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        data = to_builtins(view.shown)
        data["trace_path"] = str(Path(items[0])) if len(items) == 1 else " ".join(items)
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
        return _open(slowest, args, sys.stderr if as_json else sys.stdout)
    return EXIT_OK
