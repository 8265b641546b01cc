"""``torchscope profile | run | attach | jobs | analyze | diff | fix | check | calibrate |
serve | mcp``: the terminal's way into the same code paths.

Thin on purpose: argument parsing and printing live here, one module per subcommand
(``profile``, ``compare`` for ``profile --compare-compile`` and ``--sweep``, ``run``,
``attach`` and ``jobs`` (a running job, docs/attach.md), ``analyze``,
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


COMMANDS = (
    "profile", "run", "attach", "jobs", "analyze", "diff", "fix", "check", "calibrate", "serve",
    "mcp",
)  # fmt: skip
"""The subcommands, in the order ``--help`` lists them; each is the module of its name."""


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of ``only`` (one of :data:`COMMANDS`): a command
    line that names its subcommand imports that module alone (``torchscope analyze`` then
    skips the other eight and what they import, ~15 ms of a 0.35 s run)."""
    import argparse
    import importlib

    from torchscope._version import __version__

    parser = argparse.ArgumentParser(
        prog="torchscope",
        description="Why is this PyTorch function slow? torch.profiler, measured and explained.",
    )
    parser.add_argument("--version", action="version", version=f"torchscope {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS if only is None else (only,):
        added = importlib.import_module(f"torchscope.cli.{name}").add_parser(commands)
        if name == "profile":
            importlib.import_module("torchscope.cli.compare").add_compare_arguments(added)
    return parser


EXIT_INTERRUPTED = 130
"""Ctrl-C: 128 + SIGINT, as a shell reports a command a terminal's SIGINT ended."""
EXIT_BROKEN_PIPE = 141
"""stdout closed early (``… | head``): 128 + SIGPIPE, as coreutils end there."""


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one command line. Ctrl-C and a reader that closes stdout early end every command
    the same way, once, here: the command's own clean-up has run by then (the job and its
    worker are stopped as the exception unwinds), so all that is left is one line or none."""
    import sys

    try:
        code = _dispatch(argv)
        if not sys.stdout.closed:  # ``serve`` ends with stdout closed by pygls at ``exit``
            sys.stdout.flush()  # what is still buffered meets a closed stdout here, not at exit
        return code
    except KeyboardInterrupt:
        print("interrupted — nothing left running", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _stdout_to_devnull()
        return EXIT_BROKEN_PIPE


def _stdout_to_devnull() -> None:
    """Python's recipe for a closed stdout: what is still buffered goes nowhere, so the flush
    at exit raises no second BrokenPipeError."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _dispatch(argv: Optional[Sequence[str]]) -> int:
    import importlib
    import sys

    from torchscope.support import refusal

    refused = refusal()
    if refused is not None:  # Windows: one line naming WSL and Remote-SSH, not a traceback
        print(f"torchscope: {refused}", file=sys.stderr)
        return 2
    argv = sys.argv[1:] if argv is None else list(argv)
    for index, word in enumerate(argv):  # bytes that are not UTF-8: a lone surrogate each
        if any("\ud800" <= c <= "\udfff" for c in word):
            from torchscope.ingest.text import surrogate_message

            where = f"command-line argument {index + 1} (not UTF-8)"
            print(f"torchscope: {surrogate_message(where)}", file=sys.stderr)
            return 2
    only = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(only).parse_args(argv)
    if getattr(args, "verbose", False):  # the job's log too: the profiler's chatter
        from torchscope.chatter import show_chatter

        show_chatter(sys.stderr)
    if args.command == "profile" and args.sweep:  # one call template at each size
        from torchscope.cli import compare

        return compare.run(args)
    module = importlib.import_module(f"torchscope.cli.{args.command}")
    code: int = module.run(args)
    return code
