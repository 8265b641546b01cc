"""``torchscope analyze TRACE``: the report of a trace file written by torch.profiler;
``torchscope analyze DIR``: the cross-rank view of a folder of per-rank traces.

A single trace imports the analysis and nothing of the host, the worker, the language server
or asyncio (``tests/unit/test_cli_imports.py``); ``--open`` imports the trace server.
"""

from __future__ import annotations

import argparse
import json
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

if TYPE_CHECKING:
    from torchscope.analysis.results import Report
    from torchscope.cli.common import Commands


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    analyze = commands.add_parser(
        "analyze",
        help="analyse a trace file written by torch.profiler, or a folder of per-rank traces",
    )
    analyze.add_argument(
        "trace", type=Path, help="a Chrome-trace .json or .json.gz, or a folder of per-rank ones"
    )
    analyze.add_argument("--json", action="store_true", help="print the report as JSON")
    analyze.add_argument(
        "--steps",
        metavar="FIRST-LAST",
        help="analyse only ProfilerStep#FIRST..#LAST (e.g. 10-20): for traces too large to "
        "analyse whole",
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
    from torchscope.analysis import TraceError
    from torchscope.analysis.engine import analyze
    from torchscope.ingest import load_trace

    try:
        first_last = parse_steps(steps)
    except ValueError as exc:
        raise TraceError(f"--steps {exc}") from None
    return analyze(load_trace(trace, steps=first_last))


def _open(trace: Path, args: argparse.Namespace, link_out: TextIO) -> int:
    opened = open_in_perfetto(trace, args.perfetto_origin, args.open_timeout, link_out)
    return EXIT_OK if opened else EXIT_FAILED


def run(args: argparse.Namespace) -> int:
    from torchscope.analysis import TraceError, analyze_trace
    from torchscope.report import render_report

    trace: Path = args.trace
    as_json: bool = args.json
    if trace.is_dir():
        return analyze_folder_command(args)
    try:
        steps = args.steps
        report = analyze_trace(trace) if steps is None else _analyze_steps(trace, steps)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        data = report.to_dict()
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
        return EXIT_FAILED
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
        return _open(slowest, args, sys.stderr if as_json else sys.stdout)
    return EXIT_OK
