"""``torchscope.compareCompile`` and ``torchscope.sweep``: measure, don't assume.

``torchscope.compareCompile {uri, line, call?, mode?, steps?, warmup?, timeout_s?}`` profiles
the function around ``line`` eagerly and under ``torch.compile`` in one worker job. The eager
profile is stored and published like ``torchscope.profile``'s (verdict diagnostic, hot lines,
hovers); the comparison adds a second diagnostic on the ``def`` line (its verdict, with the
``compile-tax``/``hidden-copy``/``recompile``/``graph-break`` findings as related information),
a section in the ``def`` hover with the side-by-side table and a command link to the generated
code, and a lens title. A compile failure is a Warning diagnostic and a message with the
compiler's own error; the eager profile is still shown. Returns ``{ok, report, markdown}`` with
``report.compare`` (the ``profile --json`` object) and the comparison rendered for the client's
panel (``report.compare.comparison_page_markdown``).

``torchscope.sweep {uri, line, call, sizes?, name?, steps?, warmup?, timeout_s?}`` profiles
the function at each size (``call`` holds ``{N}``; with ``name: "batch"`` and no call, the
capture of a real call at each batch size, around the captured one without ``sizes``) and
returns ``{ok, sweep: {name, call, points, crossover, chart_path}, report, markdown}``
(``markdown``: the table for the client's panel, ``report.sweep.sweep_markdown``); the chart is
an SVG next to the traces. Nothing is published for a sweep: the client shows the table and the
chart.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from torchscope.host.batch_sweep import BATCH
from torchscope.host.compare_run import COMPARE, CompareOutcome
from torchscope.host.profile_run import ProfileFailure
from torchscope.host.sweep import (
    DEFAULT_SIZES,
    MAX_SIZES,
    SweepOutcome,
    SweepSpecError,
    parse_sweep,
    sweep,
)
from torchscope.lsp.constants import CMD_COMPARE_COMPILE, CMD_SWEEP
from torchscope.lsp.jobs import BadArguments, JobCommand, Located, publish_profile
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import COMPILE_MODES, JobOptions, to_builtins
from torchscope.report.compare import comparison_page_markdown
from torchscope.report.sweep import sweep_markdown


def _mode(raw: dict[str, Any]) -> str:
    """``mode``: ``JobOptions.compile_mode`` under the name the command takes."""
    mode = raw.get("mode", JobOptions.compile_mode)
    try:
        JobOptions().updated({"compile_mode": mode})
    except ValueError:
        modes = ", ".join(COMPILE_MODES)
        raise BadArguments(f"{CMD_COMPARE_COMPILE}: 'mode' must be one of {modes}") from None
    return str(mode)


def _publish_compare(
    ls: TorchscopeServer, located: Located, outcome: CompareOutcome
) -> dict[str, Any]:
    reply = publish_profile(ls, located, outcome)
    qualname = located.target.qualname
    error = outcome.compare.error
    if error:
        first = error.message.strip().splitlines()[0]
        ls.show(
            types.MessageType.Warning,
            f"torchscope: {first} — the eager profile of {qualname} is shown "
            "(the compiler's full message is in the hover and the log)",
        )
        ls.log(error.message, types.MessageType.Warning)
        if outcome.compile_traceback:
            ls.log(outcome.compile_traceback, types.MessageType.Warning)
    elif outcome.compare.verdict is not None:
        ls.log(f"{qualname}: {outcome.compare.verdict.headline}")
    return {**reply, "markdown": comparison_page_markdown(qualname, outcome.compare)}


COMPARE_COMMAND: JobCommand[str, CompareOutcome] = JobCommand(
    name=CMD_COMPARE_COMPILE,
    parse=_mode,
    aliases={"mode": "compile_mode"},
    title=lambda target, _: f"Comparing {target.qualname} with torch.compile",
    start=lambda ls, located, _, on_progress, on_output: ls.jobs.run(
        COMPARE, located.target, located.args.call, located.options, on_progress, on_output
    ),
    publish=_publish_compare,
)


def _sizes(raw: dict[str, Any]) -> tuple[str, list[int]]:
    name = raw.get("name", "N")
    sizes = raw.get("sizes", [] if name == BATCH else list(DEFAULT_SIZES))
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
        or (not sizes and name != BATCH)
        or len(sizes) > MAX_SIZES
        or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes)
    ):
        raise BadArguments(
            f"{CMD_SWEEP}: 'sizes' must be a list of 1 to {MAX_SIZES} positive integers "
            f"(or 'N=64,256,…') and 'name' an identifier, got {sizes!r} and {name!r}"
        )
    return name, sorted(set(sizes))


def _publish_sweep(ls: TorchscopeServer, located: Located, outcome: SweepOutcome) -> dict[str, Any]:
    ls.log(outcome.render())
    for point in outcome.points:
        if point.error:
            ls.log(
                f"{located.target.qualname} at {outcome.sweep.name}={point.n}: {point.error}",
                types.MessageType.Warning,
            )
    data = to_builtins(outcome)
    markdown = sweep_markdown(located.target.qualname, outcome.sweep, outcome.device)
    return {"ok": True, "sweep": data["sweep"], "report": data, "markdown": markdown}


def _sweep_failed(
    ls: TorchscopeServer, located: Located, failure: ProfileFailure
) -> dict[str, Any]:
    """Nothing is stored for a sweep: the message says why it stopped."""
    message = f"torchscope could not sweep {located.target.qualname}: {failure.message}"
    ls.show(types.MessageType.Error, message)
    if failure.traceback:
        ls.log(failure.traceback, types.MessageType.Error)
    return {"ok": False, "error": failure.message, "kind": failure.kind}


SWEEP_COMMAND: JobCommand[tuple[str, list[int]], SweepOutcome] = JobCommand(
    name=CMD_SWEEP,
    parse=_sizes,
    title=lambda target, sizes: f"Profiling {target.qualname} across {sizes[0]}",
    start=lambda ls, located, sizes, on_progress, on_output: sweep(
        ls.profiler,
        located.target,
        located.args.call,
        sizes[0],
        sizes[1],
        located.options,
        on_progress,
        on_output,
    ),
    publish=_publish_sweep,
    failed=_sweep_failed,
)


def register(server: TorchscopeServer) -> None:
    COMPARE_COMMAND.register(server)
    SWEEP_COMMAND.register(server)
