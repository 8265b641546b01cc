"""``torchscope profile | analyze | serve | mcp`` — the terminal's way into the same code paths.

Thin on purpose: argument parsing and printing live here; profiling lives in ``host``, trace
reading in ``analysis``, the language server in ``lsp``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from torchscope import __version__
from torchscope.cli_calibrate import add_calibrate_parser, calibrate_command
from torchscope.cli_compare import add_compare_arguments
from torchscope.cli_open import add_open_arguments, open_command, open_in_perfetto
from torchscope.protocol import JobOptions, parse_size

if TYPE_CHECKING:  # `analyze` must not import the profiling host
    from torchscope.host.profile_run import ProfileFailure

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _number(kind: type, minimum: Optional[float]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text} is not a number") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is below the minimum of {minimum}")
        return value

    return parse


def _size(text: str) -> str:
    """A memory size such as 12G, kept as written (``JobOptions.max_memory``; "": the default,
    which argparse passes through here too)."""
    try:
        if text.strip():
            parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def add_job_options(parser: argparse.ArgumentParser) -> None:
    """One flag per ``JobOptions`` field that has one, with its default and limits from there
    (``args``' attribute is the field's name, so ``job_options(args)`` fills it back)."""
    for spec in dataclasses.fields(JobOptions):
        meta = spec.metadata
        if not meta.get("flag"):
            continue
        if spec.default is False:
            parser.add_argument(
                meta["flag"], dest=spec.name, action="store_true", help=meta["help"]
            )
            continue
        if meta.get("size"):  # its help says what the default ("") means
            parser.add_argument(
                meta["flag"],
                dest=spec.name,
                default=spec.default,
                metavar="SIZE",
                type=_size,
                help=meta["help"],
            )
            continue
        kind = type(spec.default)
        parser.add_argument(
            meta["flag"],
            dest=spec.name,
            default=spec.default,
            choices=meta.get("choices"),
            metavar=None if meta.get("choices") else meta["flag"].lstrip("-").upper(),
            type=_number(kind, meta.get("minimum")) if kind in (int, float) else kind,
            help=f"{meta['help']} (default {spec.default:g})"
            if kind in (int, float)
            else f"{meta['help']} (default: {spec.default})",
        )


def job_options(args: argparse.Namespace, workspace_root: Optional[str]) -> JobOptions:
    """The job options the command line asked for."""
    values = {name: getattr(args, name) for name in vars(args)}
    return JobOptions(workspace_root=workspace_root).updated(values)


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
    from torchscope.cli_diff import add_common_arguments  # it imports this module

    add_common_arguments(profile)
    add_open_arguments(profile)
    add_compare_arguments(profile)

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

    from torchscope.cli_check import add_check_parser
    from torchscope.cli_diff import add_diff_parser

    add_diff_parser(commands)
    add_check_parser(commands)
    add_calibrate_parser(commands)

    serve = commands.add_parser("serve", help="run the language server on stdio")
    serve.add_argument("--log-level", default="INFO")

    mcp = commands.add_parser("mcp", help="run an MCP server on stdio (for coding agents)")
    mcp.add_argument("--python", default=sys.executable, help="interpreter to run the code in")
    mcp.add_argument("--timeout", type=float, default=120.0, help="seconds per job (default 120)")
    mcp.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    return parser


def print_failure(file: str, failure: ProfileFailure) -> int:
    """A failed job on stderr: ``torchscope: file:line: message`` and the user's traceback;
    returns the exit status."""
    print(f"torchscope: {failure.where(file)}: {failure.message}", file=sys.stderr)
    if failure.traceback:
        print(failure.traceback, file=sys.stderr)
    return EXIT_FAILED


def _print_json(data: Any) -> None:
    print(json.dumps(data, ensure_ascii=False))


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "serve":
        from torchscope.lsp.wiring import run_stdio

        level = args.log_level.upper()
        logging.basicConfig(level=level, stream=sys.stderr)
        if level != "DEBUG":  # at INFO pygls logs every message in full
            logging.getLogger("pygls").setLevel(logging.WARNING)
        run_stdio()
        return EXIT_OK
    if args.command == "analyze":
        return _analyze(args)
    if args.command == "mcp":
        return _mcp(args)
    if args.command == "calibrate":
        return calibrate_command(args)
    import asyncio  # only profiling needs it; `analyze` starts faster without

    if args.command == "diff":
        from torchscope.cli_diff import run_diff_command

        return asyncio.run(run_diff_command(args))
    if args.command == "check":
        from torchscope.cli_check import run_check_command

        return asyncio.run(run_check_command(args))

    from torchscope.cli_profile import run_profile_command

    return asyncio.run(run_profile_command(args))


def _mcp(args: argparse.Namespace) -> int:
    try:
        from torchscope.mcp_server import run_mcp
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("mcp"):
            raise
        print(
            "torchscope: `torchscope mcp` needs the MCP Python SDK (Python >= 3.10): "
            "pip install 'torchscope[mcp]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    return run_mcp(args.python, args.timeout, args.trace_dir.resolve() if args.trace_dir else None)


def _analyze_steps(trace: Path, steps: str) -> Any:
    from torchscope.analysis import TraceError
    from torchscope.analysis.engine import analyze
    from torchscope.ingest import load_trace

    try:
        first_last = parse_steps(steps)
    except ValueError as exc:
        raise TraceError(f"--steps {exc}") from None
    return analyze(load_trace(trace, steps=first_last))


def _analyze(args: argparse.Namespace) -> int:
    from torchscope.analysis import TraceError, analyze_trace
    from torchscope.report import render_report

    trace: Path = args.trace
    as_json: bool = args.json
    if trace.is_dir():
        from torchscope.cli_ranks import analyze_folder_command

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


def parse_steps(text: str) -> tuple[int, int]:
    """``"10-20"`` → ``(10, 20)``; ``"7"`` → ``(7, 7)``."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if m is None:
        raise ValueError(f"{text!r} is not a step range; write FIRST-LAST, e.g. 10-20")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if last < first:
        raise ValueError(f"{text!r}: the last step comes before the first; write e.g. 10-20")
    return first, last
