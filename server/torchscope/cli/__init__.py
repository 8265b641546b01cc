"""``torchscope profile | analyze | diff | fix | check | calibrate | serve | mcp``: the
terminal's way into the same code paths.

Thin on purpose: argument parsing and printing live here, one module per subcommand
(``profile``, ``compare`` for ``profile --compare-compile`` and ``--sweep``, ``analyze``,
``diff``, ``fix``, ``check``, ``calibrate``, ``serve``, ``mcp``), each with ``add_parser`` and
``run``;
what two of them share is in ``common``, and no subcommand module imports another.
Profiling lives in ``host``, trace reading in ``analysis``, the language server in ``lsp``:
each subcommand imports them inside the functions that run it, so building the parser stays
cheap (``torchscope analyze TRACE`` imports neither the host nor asyncio). Importing this
package imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from torchscope import __version__
    from torchscope.cli import (
        analyze,
        calibrate,
        check,
        compare,
        diff,
        fix,
        mcp,
        profile,
        run,
        serve,
    )

    parser = argparse.ArgumentParser(
        prog="torchscope",
        description="Why is this PyTorch function slow? torch.profiler, measured and explained.",
    )
    parser.add_argument("--version", action="version", version=f"torchscope {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    compare.add_compare_arguments(profile.add_parser(commands))
    for command in (run, analyze, diff, fix, check, calibrate, serve, mcp):
        command.add_parser(commands)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    import importlib

    args = build_parser().parse_args(argv)
    if args.command == "profile" and args.sweep:  # one call template at each size
        from torchscope.cli import compare

        return compare.run(args)
    # Each subcommand is the module of its name (``add_parser`` registered it above).
    module = importlib.import_module(f"torchscope.cli.{args.command}")
    code: int = module.run(args)
    return code
