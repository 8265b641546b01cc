"""The job options as command-line flags, for ``torchscope profile`` and its kin (``cli/``) and
for the ``%torchscope`` magic (``notebook/magics.py``): one flag per ``JobOptions`` field that
has one (and per ``RunOptions`` field for ``torchscope run``), with its default and limits from
there, a flag per job kind that declares one (``--compare-compile``), and ``--sweep``. Imports
only ``protocol`` (and the sweep's parser when a ``--sweep`` is read), so building a parser
stays cheap.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable, Optional

from torchscope.protocol import MIN_MEMORY, JobOptions, RunOptions, parse_size


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


def _size(floor: Optional[int]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        """A memory size such as 12G, kept as written (``JobOptions.max_memory``; "": the
        default, which argparse passes through here too)."""
        try:
            if text.strip():
                parse_size(text, MIN_MEMORY if floor is None else floor)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text.strip()

    return parse


def _help(spec: dataclasses.Field[Any]) -> str:
    meta, default = spec.metadata, spec.default
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return f"{meta['help']} (default {default:g})"
    if meta.get("size"):  # "" : its help says what the default means
        return f"{meta['help']} (default {default})" if default else str(meta["help"])
    return f"{meta['help']} (default: {default})"


def add_option_flags(parser: argparse.ArgumentParser, options: type[Any] = JobOptions) -> None:
    """One flag per field of ``options`` (``JobOptions``, ``RunOptions``) that has one, with its
    default and limits from there (``args``' attribute is the field's name, so
    ``job_options(args)`` / ``run_options(args)`` fill it back)."""
    for spec in dataclasses.fields(options):
        meta = spec.metadata
        if not meta.get("flag"):
            continue
        if spec.default is False:
            parser.add_argument(
                meta["flag"], dest=spec.name, action="store_true", help=meta["help"]
            )
            continue
        kind = type(spec.default)
        if meta.get("size"):
            parse: Callable[[str], Any] = _size(meta.get("floor"))
        elif kind in (int, float):
            parse = _number(kind, meta.get("minimum"))
        else:
            parse = kind
        metavar = "SIZE" if meta.get("size") else meta["flag"].lstrip("-").upper()
        parser.add_argument(
            meta["flag"],
            dest=spec.name,
            default=spec.default,
            choices=meta.get("choices"),
            metavar=None if meta.get("choices") else metavar,
            type=parse,
            help=_help(spec),
        )
    add_verbose_flag(parser)


def add_verbose_flag(parser: argparse.ArgumentParser) -> None:
    """``--verbose``: the job's log on stderr too (``torchscope/chatter.py``)."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show the job's log: the profiler's own chatter on the worker's stderr "
        "(Kineto's USDT lines), which is otherwise kept out of the output",
    )


def add_job_options(parser: argparse.ArgumentParser) -> None:
    """One flag per ``JobOptions`` field that has one."""
    add_option_flags(parser, JobOptions)


def job_options(args: argparse.Namespace, workspace_root: Optional[str]) -> JobOptions:
    """The job options the command line asked for."""
    values = {name: getattr(args, name) for name in vars(args)}
    return JobOptions(workspace_root=workspace_root).updated(values)


def run_options(args: argparse.Namespace) -> RunOptions:
    """``torchscope run``'s options the command line asked for."""
    return RunOptions().updated(vars(args))


def _flag_kinds() -> list[tuple[str, str]]:
    """``(flag, kind)`` for every job kind the CLI can run instead of a plain profile."""
    from torchscope.protocol import JOB_KINDS

    return [(r.CLI_FLAG, kind) for kind, r in JOB_KINDS.items() if r.CLI_FLAG]


def add_kind_flags(parser: argparse.ArgumentParser) -> None:
    """A flag per job kind that declares one (``--compare-compile``)."""
    from torchscope.protocol import JOB_KINDS

    for flag, kind in _flag_kinds():
        parser.add_argument(flag, action="store_true", help=JOB_KINDS[kind].CLI_HELP)
        alias, help_text = JOB_KINDS[kind].CLI_ALIAS
        if alias:  # the same job: sets the flag's own destination
            dest = flag.lstrip("-").replace("-", "_")
            parser.add_argument(alias, dest=dest, action="store_true", help=help_text)


def chosen_kinds(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The ``(flag, kind)`` pairs given on the command line."""
    chosen = []
    for flag, kind in _flag_kinds():
        if getattr(args, flag.lstrip("-").replace("-", "_"), False):
            chosen.append((flag, kind))
    return chosen


def _sweep_spec(text: str) -> tuple[str, list[int]]:
    from torchscope.host.sweep import SweepSpecError, parse_sweep

    try:
        return parse_sweep(text)
    except SweepSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """A flag per job kind that declares one (``--compare-compile``), and ``--sweep``."""
    add_kind_flags(parser)
    parser.add_argument(
        "--sweep",
        type=_sweep_spec,
        metavar="N=64,256,1024",
        help="profile at each size: the call expression's {N} placeholder takes each value; "
        "with no call expression, batch=1,8,32 replays the capture of a real call (torchscope "
        "run --capture) with its tensors' batch dimension cut or repeated to each size "
        "(batch alone: a quarter to four times the captured size)",
    )
    parser.add_argument(
        "--batch-dim",
        type=int,
        default=None,
        metavar="N",
        help="with --sweep batch: the captured tensors' batch dimension (default: read from "
        "the model's batch_first, else the dimension the tensor arguments share)",
    )
