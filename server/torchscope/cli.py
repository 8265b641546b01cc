"""``torchscope profile | analyze | serve`` — the terminal's way into the same code paths.

Thin on purpose: argument parsing and printing live here; profiling lives in ``host``, trace
reading in ``analysis``, the language server in ``lsp``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from torchscope import __version__
from torchscope.cli_compare import add_compare_arguments
from torchscope.cli_open import add_open_arguments, open_command, open_in_perfetto

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def _memory_size(text: str) -> int:
    from torchscope.host.process_tree import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchscope",
        description="Why is this PyTorch function slow? torch.profiler, measured and explained.",
    )
    parser.add_argument("--version", action="version", version=f"torchscope {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    profile = commands.add_parser(
        "profile",
        help="profile one function: FILE::FUNCTION",
        description="Profile FILE::FUNCTION (e.g. examples/matmul_add.py::fn). Without --call, "
        "every `# torchscope: <call>` directive above the def is profiled in turn.",
    )
    profile.add_argument("target", help="FILE::QUALNAME, e.g. model.py::Model.forward")
    profile.add_argument("--call", help="call expression, e.g. 'fn(torch.randn(8, 8), w, b)'")
    profile.add_argument(
        "--steps", type=_positive_int, default=5, help="profiled calls (default 5)"
    )
    profile.add_argument(
        "--warmup", type=int, default=3, help="unmeasured warmup calls (default 3)"
    )
    profile.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per job (default 120)"
    )
    profile.add_argument("--python", default=sys.executable, help="interpreter to run the code in")
    profile.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    profile.add_argument(
        "--max-memory",
        type=_memory_size,
        default=None,
        metavar="SIZE",
        help="stop the worker when its processes hold more memory than this, e.g. 12G "
        "(default: half the physical memory)",
    )
    profile.add_argument(
        "--with-stack",
        action="store_true",
        help="record Python frames too: totals for the workspace functions it calls (slower)",
    )
    profile.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    profile.add_argument("--json", action="store_true", help="print the report as JSON")
    profile.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_open_arguments(profile)
    add_compare_arguments(profile)

    analyze = commands.add_parser("analyze", help="analyse a trace file written by torch.profiler")
    analyze.add_argument("trace", type=Path, help="a Chrome-trace .json or .json.gz")
    analyze.add_argument("--json", action="store_true", help="print the report as JSON")
    add_open_arguments(analyze)

    serve = commands.add_parser("serve", help="run the language server on stdio")
    serve.add_argument("--log-level", default="INFO")
    return parser


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False))


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "serve":
        from torchscope.lsp.server import run_stdio

        level = args.log_level.upper()
        logging.basicConfig(level=level, stream=sys.stderr)
        if level != "DEBUG":  # at INFO pygls logs every message in full
            logging.getLogger("pygls").setLevel(logging.WARNING)
        run_stdio()
        return EXIT_OK
    if args.command == "analyze":
        return _analyze(args)
    import asyncio  # only profiling needs it; `analyze` starts faster without

    from torchscope.cli_profile import run_profile_command

    return asyncio.run(run_profile_command(args))


def _analyze(args: argparse.Namespace) -> int:
    from torchscope.analysis import TraceError, analyze_trace, render_report

    trace: Path = args.trace
    as_json: bool = args.json
    try:
        report = analyze_trace(trace)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        data = report.to_dict()
        data["trace_path"] = str(trace)
        _print_json(data)
    else:
        print(render_report(report))
        print(f"trace: {trace}")
        if not args.open:
            print(f"open it in Perfetto: {open_command(str(trace))}")
    if args.open:  # the link goes to stderr with --json, so stdout stays one JSON object
        link_out = sys.stderr if as_json else sys.stdout
        opened = open_in_perfetto(trace, args.perfetto_origin, args.open_timeout, link_out)
        return EXIT_OK if opened else EXIT_FAILED
    return EXIT_OK
