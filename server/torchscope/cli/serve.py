"""``torchscope serve``: the language server on stdio (``lsp/``, imported only here)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from torchscope.cli.common import EXIT_OK

if TYPE_CHECKING:
    from torchscope.cli.common import Commands


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    serve = commands.add_parser("serve", help="run the language server on stdio")
    serve.add_argument("--log-level", default="INFO")
    return serve


def run(args: argparse.Namespace) -> int:
    from torchscope.lsp.wiring import run_stdio

    level = args.log_level.upper()
    logging.basicConfig(level=level, stream=sys.stderr)
    if level != "DEBUG":  # at INFO pygls logs every message in full
        logging.getLogger("pygls").setLevel(logging.WARNING)
    run_stdio()
    return EXIT_OK
