"""``%load_ext torchscope``: the ``%torchscope`` line magic and the ``%%torchscope`` cell magic.

- ``%torchscope [flags] EXPR``: profile one call expression over the notebook's namespace;
- ``%%torchscope [flags]``: the cell's last statement is the call, the lines above it run first
  (as setup, in the notebook's namespace; a function defined there gets per-line numbers);
- the flags are ``torchscope profile``'s, made by the CLI's own parser pieces from the one
  ``JobOptions`` (``--steps``, ``--memory``, ``--mode``…), with ``--compare-compile`` and
  ``--sweep N=…`` (the expression then holds ``{N}``; braces are not expanded by IPython here).

A failure prints ``torchscope: …`` and the user's traceback, as the CLI does. IPython is
imported only by ``load``, when IPython loads the extension.
"""

from __future__ import annotations

import argparse
import ast
import sys
from typing import Any, Optional

from torchscope.notebook.api import (
    ProfileError,
    compare_call,
    prepare,
    profile_call,
    sweep_calls,
)
from torchscope.notebook.result import ProfileReport

#: Flags of ``torchscope profile`` that mean nothing in-process, and why.
NOT_IN_PROCESS = {
    "nproc": "--nproc runs ranks in worker processes: use `torchscope profile --nproc N`",
}


class MagicUsage(Exception):
    """The magic's line cannot be parsed; the message says what to write."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # never SystemExit inside a kernel
        raise MagicUsage(f"%torchscope: {message}\n{self.format_usage()}")


def build_parser() -> argparse.ArgumentParser:
    """``torchscope profile``'s job-option flags, ``--compare-compile`` and ``--sweep``."""
    from torchscope.flags import add_compare_arguments, add_job_options

    parser = _Parser(
        prog="%torchscope",
        description="Profile one call in this kernel: %torchscope [flags] fn(x), or "
        "%%torchscope [flags] with the call as the cell's last line.",
        add_help=True,
    )
    add_job_options(parser)
    add_compare_arguments(parser)
    return parser


def split_line(parser: argparse.ArgumentParser, line: str) -> tuple[list[str], str]:
    """The leading flags (with their values) and the expression after them, kept verbatim."""
    flags: list[str] = []
    rest = line.strip()
    expects_value = False
    while rest and (expects_value or rest.startswith("-")):
        token, _, tail = rest.partition(" ")
        if not expects_value:
            name = token.split("=", 1)[0]
            action = parser._option_string_actions.get(name)
            expects_value = action is not None and action.nargs != 0 and "=" not in token
        else:
            expects_value = False
        flags.append(token)
        rest = tail.lstrip()
    return flags, rest


def parse(line: str) -> tuple[argparse.Namespace, str]:
    """The options namespace and the expression of a ``%torchscope`` line."""
    parser = build_parser()
    flags, expression = split_line(parser, line)
    args = parser.parse_args(flags)
    for name, why in NOT_IN_PROCESS.items():
        if getattr(args, name, None):
            raise MagicUsage(f"%torchscope: {why}")
    return args, expression


def split_cell(cell: str) -> tuple[list[ast.stmt], str]:
    """The setup statements and the source of the last statement, which must be a call."""
    try:
        tree = ast.parse(cell)
    except SyntaxError as exc:
        raise MagicUsage(f"%%torchscope: the cell is not valid Python: {exc}") from None
    if not tree.body:
        raise MagicUsage("%%torchscope: the cell is empty — its last line is the call to profile")
    last = tree.body[-1]
    source = ast.get_source_segment(cell, last) or ""
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)):
        raise MagicUsage(
            f"%%torchscope: the cell's last statement `{source.strip()[:80]}` is not a call — "
            "end the cell with the call to profile, e.g. fn(x)"
        )
    return tree.body[:-1], source


def run(line: str, namespace: dict[str, Any], options: Any = None) -> ProfileReport:
    """Profile what ``line`` asks for over ``namespace``; raises ``MagicUsage`` or
    ``ProfileError``."""
    from torchscope.flags import job_options

    args, expression = parse(line)
    if not expression:
        raise MagicUsage("%torchscope: give a call to profile, e.g. %torchscope fn(x)")
    chosen = options or job_options(args, workspace_root=None)
    if args.verbose:  # the job's log under the cell too: the profiler's chatter
        from torchscope.chatter import chatter_shown

        with chatter_shown(sys.stderr):
            return _run_parsed(args, expression, namespace, chosen)
    return _run_parsed(args, expression, namespace, chosen)


def _run_parsed(
    args: argparse.Namespace, expression: str, namespace: dict[str, Any], chosen: Any
) -> ProfileReport:
    if args.sweep is not None:
        if args.compare_compile:
            raise MagicUsage("%torchscope: --sweep and --compare-compile cannot be combined")
        name, sizes = args.sweep
        return sweep_calls(expression, name, sizes, namespace, chosen)
    prepared = prepare(expression, namespace)
    if args.compare_compile:
        return compare_call(prepared, chosen)
    return profile_call(prepared, chosen)


def _report_failure(failure: ProfileError) -> None:
    print(f"torchscope: {failure.message}", file=sys.stderr)
    if failure.traceback:
        print(failure.traceback, file=sys.stderr)


def _run_setup(shell: Any, statements: list[ast.stmt], cell: str) -> None:
    """Run the cell's setup in the notebook's namespace, compiled under a cell file name of
    its own (so its functions' source and line numbers are the cell's: line 1 is the
    ``%%torchscope`` line)."""
    if not statements:
        return
    source = "\n" + cell
    filename = shell.compile.cache(source, shell.execution_count)
    module = ast.Module(body=statements, type_ignores=[])
    ast.increment_lineno(module, 1)
    exec(compile(module, filename, "exec"), shell.user_ns)


def magic(shell: Any, line: str, cell: Optional[str] = None) -> Optional[ProfileReport]:
    """``%torchscope`` and ``%%torchscope``: the report (displayed as the cell's output), or
    None after printing why not."""
    from IPython.core.error import UsageError

    try:
        if cell is not None:
            setup, call = split_cell(cell)
            parse(line)  # a bad flag fails before the setup runs
            _run_setup(shell, setup, cell)
            line = f"{line} {call}"
        return run(line, shell.user_ns)
    except MagicUsage as exc:
        raise UsageError(str(exc)) from None
    except SystemExit:  # --help printed the usage
        return None
    except ProfileError as failure:
        _report_failure(failure)
        return None


def load(ipython: Any) -> None:
    """Register ``%torchscope`` / ``%%torchscope`` on ``ipython``."""

    def torchscope(line: str, cell: Optional[str] = None) -> Optional[ProfileReport]:
        return magic(ipython, line, cell)

    torchscope.__doc__ = build_parser().format_help()
    # `{N}` in `--sweep` expressions is ours: IPython must not expand it.
    torchscope._ipython_no_var_expand = True  # type: ignore[attr-defined]
    ipython.register_magic_function(torchscope, magic_kind="line_cell", magic_name="torchscope")
