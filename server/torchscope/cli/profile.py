"""``torchscope profile FILE::FUNCTION``: profile in a worker, print the verdict and the trace.

Each directive (or ``--call``) runs as a plain profile or as the job kind its flag chose
(``--compare-compile``, ``compare.py``); with ``--nproc N`` (or a directive's ``nproc=N``) on
N ranks under torchrun, printed as the cross-rank view. ``profile --sweep`` is ``compare.py``'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from torchscope.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_common_arguments,
    add_open_arguments,
    chosen_kind,
    open_in_perfetto,
    open_service,
    output_printer,
    print_failure,
    progress_printer,
    read_target,
    render_text,
    say,
)
from torchscope.protocol import to_builtins

# The profiling machinery is imported where it runs: building the parser must stay cheap.
if TYPE_CHECKING:
    from torchscope.cli.common import Commands
    from torchscope.host.profile_run import ProfileOutcome
    from torchscope.host.session import JobService
    from torchscope.protocol import Hello
    from torchscope.source.targets import Target


@dataclass
class CliReport:
    """What ``torchscope profile`` prints for one job: the profile, and what the kind adds to it
    (under ``key`` in ``--json``, ``text`` after the text report, ``stderr`` lines first)."""

    profile: ProfileOutcome
    key: Optional[str] = None
    extra: Optional[Callable[[], dict[str, Any]]] = None
    """The addition's JSON (called only for ``--json``)."""
    text: str = ""
    stderr: list[str] = field(default_factory=list)


def cli_report(outcome: Any, verbose: bool) -> CliReport:
    """A job's outcome as the CLI prints it (``verbose``: without ``--quiet``); a comparison
    adds its table (``report/compare.py``) after the eager profile."""
    from torchscope.host.compare_run import CompareOutcome
    from torchscope.report.compare import comparison_outcome_text

    if not isinstance(outcome, CompareOutcome):
        return CliReport(outcome)
    text, stderr = comparison_outcome_text(outcome.compare, outcome.compile_traceback, verbose)
    return CliReport(outcome.profile, "compare", lambda: to_builtins(outcome.compare), text, stderr)


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    profile = commands.add_parser(
        "profile",
        help="profile one function: FILE::FUNCTION",
        description="Profile FILE::FUNCTION (e.g. examples/matmul_add.py::fn). Without --call, "
        "every `# torchscope: <call>` directive above the def is profiled in turn.",
    )
    profile.add_argument("target", help="FILE::QUALNAME, e.g. model.py::Model.forward")
    add_common_arguments(profile)
    add_open_arguments(profile)
    return profile


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(run_profile_command(args))


def _print_outcome(args: argparse.Namespace, source: str, target: Target, job: CliReport) -> Path:
    """Print one job (as JSON or text); returns its trace."""
    outcome = job.profile
    for line in job.stderr:
        print(line, file=sys.stderr)
    if args.json:
        data = to_builtins(outcome)
        if job.key is not None and job.extra is not None:
            data[job.key] = job.extra()
        print(json.dumps(data, ensure_ascii=False), flush=True)
    else:
        from torchscope.report import source_with_margin

        listing = source_with_margin(source, target.first_line, target.end_line, outcome.report)
        text = render_text(outcome, listing, not args.open)
        print(text + job.text, flush=True)
    return Path(outcome.result.trace_path)


async def run_profile_command(args: argparse.Namespace) -> int:
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.protocol import call_expression_problem

    found = read_target(args.target)
    if found is None:
        return EXIT_USAGE
    source, target = found
    problem = call_expression_problem(args.call) if args.call else None
    if problem is not None:  # told before a worker starts (that takes seconds)
        return print_failure(target.file, ProfileFailure("call-invalid", problem, target.def_line))
    service = open_service(args)
    on_progress, on_output = progress_printer(args), output_printer(args)
    status = EXIT_OK
    traces: list[Path] = []
    try:
        say(args.quiet, f"starting a worker with {args.python}")
        hello = await service.hello()
        _say_hello(args, hello)
        for call, nproc in _calls(args, target, hello.cuda_available):
            say(args.quiet, f"profiling {call or target.qualname + '()'}")
            if nproc > 1:  # on N ranks under torchrun
                ranks = await profile_ranks_command(args, service, target, call, nproc, hello)
                status = max(status, ranks)
                continue
            try:
                kind = chosen_kind(args)
                done = await service.run(kind, target, call, None, on_progress, on_output)
                job = cli_report(done, verbose=not args.quiet)
            except ProfileFailure as failure:
                status = EXIT_FAILED
                print_failure(target.file, failure)
                continue
            traces.append(_print_outcome(args, source, target, job))
    except ProfileFailure as failure:
        print(f"torchscope: {failure.message}", file=sys.stderr)
        status = EXIT_FAILED
    finally:
        await service.close()
    if args.open and not _open_all(args, traces):
        status = EXIT_FAILED
    return status


def _say_hello(args: argparse.Namespace, hello: Hello) -> None:
    devices = ", ".join(hello.device_names)
    torch = f"torch {hello.torch_version}, "
    say(args.quiet, torch + (f"CUDA: {devices}" if hello.cuda_available else "CPU only"))


def _calls(args: argparse.Namespace, target: Target, cuda: bool) -> list[tuple[Optional[str], int]]:
    """``--call``, else every directive that applies here, else the bare function; each with
    its number of ranks (``--nproc``, else the directive's ``nproc=N``, else 1)."""
    if args.call:
        return [(args.call, args.nproc or 1)]
    found: list[tuple[Optional[str], int]] = [
        (d.call, args.nproc or d.nproc or 1) for d in target.applicable_directives(cuda)
    ]
    return found or [(None, args.nproc or 1)]


def _open_all(args: argparse.Namespace, traces: list[Path]) -> bool:
    """``--open``: one after the other, each served once (the link to stderr with --json)."""
    link_out = sys.stderr if args.json else sys.stdout
    opened = [
        open_in_perfetto(trace, args.perfetto_origin, args.open_timeout, link_out)
        for trace in traces
    ]
    return all(opened)


async def profile_ranks_command(
    args: argparse.Namespace,
    service: JobService,
    target: Target,
    call: Optional[str],
    nproc: int,
    hello: Hello,
) -> int:
    """``profile --nproc N``: run the ranks, print the cross-rank view (or ``--json``); 0 on
    success, 1 when a rank failed (its traceback on stderr)."""
    from torchscope.host.profile_run import ProfileFailure
    from torchscope.host.rank_profile import resolve_backend
    from torchscope.report import render_report
    from torchscope.report.ranks import render_ranks

    cuda_available = hello.cuda_available
    options = service.options({"nproc": nproc})
    backend = resolve_backend(options, cuda_available)

    def show(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    show(f"[torchscope] {nproc} ranks ({backend}) under torch.distributed.run")
    try:
        done = await service.profile_ranks(target, call, options, cuda_available, show)
    except ProfileFailure as failure:
        return print_failure(target.file, failure)
    if args.json:
        print(json.dumps(to_builtins(done), ensure_ascii=False), flush=True)
        return 0
    view = done.view
    print(f"== {target.qualname} ({target.file}:{target.def_line}) on {nproc} ranks")
    print(f"   call: {call or target.qualname + '()'}")
    print(render_ranks(view))
    print()
    print(f"== rank {view.slowest} (the slowest) ==")
    print(render_report(view.reports[view.slowest]))
    print(f"\ntraces: {done.trace_dir}", flush=True)
    return 0
