"""``torchscope.compareCompile`` and ``torchscope.sweep``: measure, don't assume.

``torchscope.compareCompile {uri, line, call?, mode?, steps?, warmup?, timeout_s?}`` profiles
the function around ``line`` eagerly and under ``torch.compile`` in one worker job. The eager
profile is stored and published like ``torchscope.profile``'s (verdict diagnostic, hot lines,
hovers); the comparison adds a second diagnostic on the ``def`` line (its verdict, with the
``compile-tax``/``hidden-copy``/``recompile``/``graph-break`` findings as related information),
a section in the ``def`` hover with the side-by-side table and a command link to the generated
code, and a lens title. A compile failure is a Warning diagnostic and a message with the
compiler's own error; the eager profile is still shown. Returns ``{ok, report}`` with
``report.compare`` (the ``profile --json`` object).

``torchscope.sweep {uri, line, call, sizes?, name?, steps?, warmup?, timeout_s?}`` profiles
the function at each size (``call`` holds ``{N}``) and returns
``{ok, sweep: {name, call, points, crossover, chart_path}, report}``; the chart is an SVG next to
the traces. Nothing is published for a sweep: the client shows the table and the chart.
"""

from __future__ import annotations

from typing import Any, TypeVar

from lsprotocol import types

from torchscope.host.compare_run import compare_compile
from torchscope.host.profile_run import ProfileFailure
from torchscope.host.sweep import DEFAULT_SIZES, MAX_SIZES, SweepSpecError, parse_sweep, sweep
from torchscope.lsp.constants import CMD_COMPARE_COMPILE, CMD_SWEEP
from torchscope.lsp.jobs import (
    BadArguments,
    parse_args,
    prepare,
    publish_profile,
    refuse,
    report_failure,
    with_progress,
)
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import COMPILE_MODES

T = TypeVar("T")


async def compare(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    try:
        args, raw = parse_args(CMD_COMPARE_COMPILE, arguments)
        mode = raw.get("mode", "default")
        if mode not in COMPILE_MODES:
            modes = ", ".join(COMPILE_MODES)
            raise BadArguments(f"{CMD_COMPARE_COMPILE}: 'mode' must be one of {modes}")
    except BadArguments as exc:
        return refuse(ls, exc)
    located, failed = prepare(ls, args)
    if located is None:
        return failed or {"ok": False, "error": "no function"}
    target = located.target
    try:
        outcome, cancelled = await with_progress(
            ls,
            f"Comparing {target.qualname} with torch.compile",
            target.qualname,
            lambda on_progress, on_output: compare_compile(
                ls.profiler, target, args.call, located.options, mode, on_progress, on_output
            ),
        )
    except ProfileFailure as failure:
        return report_failure(ls, args.uri, failure, target.def_line, located.source, target)
    if outcome is None:
        return {"ok": False, "error": cancelled or "cancelled"}
    reply = publish_profile(ls, args.uri, located, outcome)
    error = outcome.compare.error
    if error:
        first = error.message.strip().splitlines()[0]
        ls.show(
            types.MessageType.Warning,
            f"torchscope: {first} — the eager profile of {target.qualname} is shown "
            "(the compiler's full message is in the hover and the log)",
        )
        ls.log(error.message, types.MessageType.Warning)
        if outcome.compile_traceback:
            ls.log(outcome.compile_traceback, types.MessageType.Warning)
    elif outcome.compare.verdict is not None:
        ls.log(f"{target.qualname}: {outcome.compare.verdict.headline}")
    return reply


def _sizes(raw: dict[str, Any]) -> tuple[str, list[int]]:
    name = raw.get("name", "N")
    sizes = raw.get("sizes", list(DEFAULT_SIZES))
    if isinstance(sizes, str):
        spec = sizes if "=" in sizes else f"{name}={sizes}"
        try:
            return parse_sweep(spec)
        except SweepSpecError as exc:
            raise BadArguments(f"{CMD_SWEEP}: {exc}") from None
    if (
        not isinstance(name, str)
        or not name.isidentifier()
        or not isinstance(sizes, list)
        or not sizes
        or len(sizes) > MAX_SIZES
        or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes)
    ):
        raise BadArguments(
            f"{CMD_SWEEP}: 'sizes' must be a list of 1 to {MAX_SIZES} positive integers "
            f"(or 'N=64,256,…') and 'name' an identifier, got {sizes!r} and {name!r}"
        )
    return name, sorted(set(sizes))


async def sweep_command(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    try:
        args, raw = parse_args(CMD_SWEEP, arguments)
        name, sizes = _sizes(raw)
    except BadArguments as exc:
        return refuse(ls, exc)
    located, failed = prepare(ls, args)
    if located is None:
        return failed or {"ok": False, "error": "no function"}
    target = located.target
    try:
        outcome, cancelled = await with_progress(
            ls,
            f"Profiling {target.qualname} across {name}",
            target.qualname,
            lambda on_progress, on_output: sweep(
                ls.profiler, target, args.call, name, sizes, located.options, on_progress, on_output
            ),
        )
    except ProfileFailure as failure:
        message = f"torchscope could not sweep {target.qualname}: {failure.message}"
        ls.show(types.MessageType.Error, message)
        if failure.traceback:
            ls.log(failure.traceback, types.MessageType.Error)
        return {"ok": False, "error": failure.message, "kind": failure.kind}
    if outcome is None:
        return {"ok": False, "error": cancelled or "cancelled"}
    ls.log(outcome.render())
    for point in outcome.points:
        if point.error:
            ls.log(
                f"{target.qualname} at {name}={point.n}: {point.error}", types.MessageType.Warning
            )
    data = outcome.to_json()
    return {"ok": True, "sweep": data["sweep"], "report": data}


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_COMPARE_COMPILE)
    async def compare_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await compare(ls, arguments)

    @server.command(CMD_SWEEP)
    async def sweep_handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await sweep_command(ls, arguments)
