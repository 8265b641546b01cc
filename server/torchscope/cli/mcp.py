"""``torchscope mcp``: an MCP server on stdio for coding agents (``mcp_server.py``, imported
only here; it needs the MCP SDK, the ``mcp`` extra)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from torchscope.cli.common import EXIT_USAGE
from torchscope.protocol import JobOptions

if TYPE_CHECKING:
    from torchscope.cli.common import Commands


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    mcp = commands.add_parser("mcp", help="run an MCP server on stdio (for coding agents)")
    mcp.add_argument("--python", default=sys.executable, help="interpreter to run the code in")
    timeout = JobOptions.timeout_s
    mcp.add_argument(
        "--timeout", type=float, default=timeout, help=f"seconds per job (default {timeout:g})"
    )
    mcp.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    return mcp


def run(args: argparse.Namespace) -> int:
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
