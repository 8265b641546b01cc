"""What the subcommands share: exit codes, the job-option flags, the profiling set-up, the job
kind a flag chose, one comparison against a git revision, and ``--open`` (the trace in the
Perfetto UI).

Building the parser imports only ``protocol``: the host (workers, the trace server) is
imported inside the functions that run a job, so ``torchscope analyze`` never pays for it.
``--open`` serves the trace once from ``http://127.0.0.1:9001`` (``host/trace_server.py``),
prints ``Perfetto: <link>``, tries to open a browser, and returns after the UI fetched the
trace or after ``--open-timeout`` seconds. Without ``--open`` the CLI prints the command that
does it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO

from torchscope.protocol import (
    PERFETTO_ORIGIN,
    PERFETTO_PORT,
    PERFETTO_TIMEOUT_S,
    JobOptions,
    parse_size,
)

if TYPE_CHECKING:
    from typing_extensions import TypeAlias

    from torchscope.host.diff_run import DiffOutcome
    from torchscope.host.profile_run import CliReport, ProfileFailure, ProfileOutcome, Profiler
    from torchscope.protocol import Output, Progress
    from torchscope.targets import Target

    #: What ``add_subparsers`` returns: each subcommand module adds its parser to it.
    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

#: Overrides for tests and self-hosted UIs (the public UI only fetches from 127.0.0.1:9001).
ORIGIN_ENV = "TORCHSCOPE_PERFETTO_ORIGIN"
PORT_ENV = "TORCHSCOPE_PERFETTO_PORT"


def print_failure(file: str, failure: ProfileFailure) -> int:
    """A failed job on stderr: ``torchscope: file:line: message`` and the user's traceback;
    returns the exit status."""
    print(f"torchscope: {failure.where(file)}: {failure.message}", file=sys.stderr)
    if failure.traceback:
        print(failure.traceback, file=sys.stderr)
    return EXIT_FAILED


def render_text(outcome: ProfileOutcome, listing: str, open_hint: bool = True) -> str:
    from torchscope.report import render_report

    target = outcome.target
    trace_path = outcome.result.trace_path
    arguments = _ARGUMENTS.get(outcome.inputs()["source"], "()")
    lines = [
        f"== {target.qualname} ({target.file}:{target.def_line})",
        f"   call: {outcome.call or target.qualname + arguments}",
        *_inputs_line(outcome.inputs()),
        render_report(outcome.report),
    ]
    if outcome.report.lines:
        lines += ["", listing]
    elif outcome.result.attribution_note:
        lines += ["", outcome.result.attribution_note]
    lines += ["", f"trace: {trace_path}"]
    if open_hint:
        lines.append(f"open it in Perfetto: {open_command(trace_path)}")
    lines.append("")
    return "\n".join(lines)


_ARGUMENTS = {
    "capture": "(<captured inputs>)",
    "run": "(<the program's arguments>)",
    "call-expression": "()",
    "directive": "()",
}


def _inputs_line(inputs: dict[str, Any]) -> list[str]:
    """Where a replay's or a run's inputs came from (nothing for a call expression)."""
    from torchscope.host.captures import age_text

    if inputs.get("source") == "capture":
        age = age_text(inputs.get("captured_at"))
        when = f", {age}" if age else ""
        return [f"   inputs: captured from a real call{when} ({inputs['path']})"]
    if inputs.get("source") == "run":
        saved = f", saved to {inputs['path']}" if inputs.get("path") else ""
        return [f"   inputs: the program's own arguments{saved}"]
    return []


def say(quiet: bool, text: str) -> None:
    """A progress line on stderr (``[torchscope] …``), unless ``--quiet``."""
    if not quiet:
        print(f"[torchscope] {text}", file=sys.stderr, flush=True)


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


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags ``profile``, ``diff`` and ``check`` share, plus every job option (``--steps``,
    ``--timeout``…)."""
    parser.add_argument(
        "--call",
        help="call expression, e.g. 'fn(torch.randn(8, 8), w, b)' (default: the "
        "# torchscope: directive)",
    )
    add_job_options(parser)
    parser.add_argument("--python", default=sys.executable, help="interpreter to run the code in")
    parser.add_argument("--trace-dir", type=Path, help="where traces go (default: user cache)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def read_target(spec: str) -> Optional[tuple[str, Target]]:
    """``FILE::QUALNAME`` read from disk: the file's source and the function; None (the reason
    on stderr) when it cannot be."""
    from torchscope.targets import TargetError, function_named, parse_spec, read_source

    try:
        path, qualname = parse_spec(spec)
        source = read_source(path)
        return source, function_named(source, str(path), qualname)
    except TargetError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return None


def make_profiler(args: argparse.Namespace) -> Profiler:
    from torchscope.host.profile_run import Profiler
    from torchscope.host.trace_store import TraceStore

    store = TraceStore(args.trace_dir.resolve() if args.trace_dir else None)
    return Profiler(
        args.python,
        store,
        cwd=str(Path.cwd()),
        on_worker_stderr=lambda line: None if args.quiet else print(line, file=sys.stderr),
    )


def progress_printer(args: argparse.Namespace) -> Callable[[Progress], None]:
    """The job's progress on stderr (``[torchscope] stage: message``) unless ``--quiet``."""

    def on_progress(message: Progress) -> None:
        say(args.quiet, f"{message.stage}: {message.message}")

    return on_progress


def output_printer(args: argparse.Namespace) -> Callable[[Output], None]:
    """What the profiled code printed, on stderr unless ``--quiet``."""

    def on_output(message: Output) -> None:
        if not args.quiet:
            sys.stderr.write(message.text)

    return on_output


def _flag_kinds() -> list[tuple[str, str]]:
    """``(flag, kind)`` for every job kind the CLI can run instead of a plain profile."""
    from torchscope.protocol import JOB_KINDS

    return [(r.CLI_FLAG, kind) for kind, r in JOB_KINDS.items() if r.CLI_FLAG]


def add_kind_flags(parser: argparse.ArgumentParser) -> None:
    """A flag per job kind that declares one (``--compare-compile``)."""
    from torchscope.protocol import JOB_KINDS

    for flag, kind in _flag_kinds():
        parser.add_argument(flag, action="store_true", help=JOB_KINDS[kind].CLI_HELP)


def chosen_kinds(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The ``(flag, kind)`` pairs given on the command line."""
    chosen = []
    for flag, kind in _flag_kinds():
        if getattr(args, flag.lstrip("-").replace("-", "_"), False):
            chosen.append((flag, kind))
    return chosen


async def run_kind(
    profiler: Profiler,
    target: Target,
    call: Optional[str],
    options: JobOptions,
    args: argparse.Namespace,
    on_progress: Callable[[Progress], None],
    on_output: Callable[[Output], None],
) -> CliReport:
    """A plain profile, or the job kind whose flag was given (``--compare-compile``)."""
    from torchscope.host.job_kinds import host_kinds
    from torchscope.protocol import ProfileRequest

    chosen = chosen_kinds(args)
    kind = host_kinds()[chosen[0][1] if chosen else ProfileRequest.TYPE]
    outcome = await profiler.run_job(kind, target, call, options, on_progress, on_output)
    return kind.cli_report(outcome, verbose=not args.quiet)


async def diff_one(
    profiler: Profiler,
    args: argparse.Namespace,
    target: Target,
    call: Optional[str],
    rev: str,
    workspace_root: Optional[str] = None,
) -> DiffOutcome:
    """One comparison (``diff``, and each function of ``check``); raises ``GitError`` or
    ``ProfileFailure`` with the user's message."""
    from torchscope.host.diff_run import DiffJobKind
    from torchscope.host.git_source import source_at

    before = source_at(Path(target.file), rev)
    options = job_options(args, workspace_root or str(Path.cwd()))
    kind = DiffJobKind(before, rev)
    return await profiler.run_job(kind, target, call, options, progress_printer(args))


def add_open_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--open",
        action="store_true",
        help="open the trace in the Perfetto UI in your browser (served once from 127.0.0.1:9001)",
    )
    parser.add_argument(
        "--open-timeout",
        type=float,
        default=PERFETTO_TIMEOUT_S,
        metavar="S",
        help=f"with --open: stop serving after S seconds (default {PERFETTO_TIMEOUT_S:.0f})",
    )
    parser.add_argument(
        "--perfetto-origin",
        default=os.environ.get(ORIGIN_ENV) or PERFETTO_ORIGIN,
        metavar="URL",
        help=f"the Perfetto UI to open (default {PERFETTO_ORIGIN}, or ${ORIGIN_ENV})",
    )


def open_command(trace: str) -> str:
    """The exact command that opens ``trace`` in the Perfetto UI."""
    return f"torchscope analyze {shlex.quote(trace)} --open"


def _has_gui_browser() -> bool:
    """Whether ``webbrowser`` would open a graphical browser (not lynx in this terminal)."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _no_browser_hint(port: int) -> str:
    ssh = os.environ.get("SSH_CONNECTION")
    host = ssh.split()[2] if ssh and len(ssh.split()) > 2 else "<host>"
    return "no graphical browser here: open the link in a browser on this machine" + (
        f" — over SSH, forward the port first (ssh -L {port}:127.0.0.1:{port} {host})"
        if ssh
        else ""
    )


def open_in_perfetto(
    trace: Path, origin: str, timeout_s: float, link_out: Optional[TextIO] = None
) -> bool:
    """Serve ``trace`` for the Perfetto UI; True once it was fetched, False on error/timeout.

    ``Perfetto: <link>`` goes to ``link_out`` (stdout by default) before the wait.
    """
    import threading
    import webbrowser

    from torchscope.host.browser import remove, write_redirect
    from torchscope.host.trace_server import TraceServer, TraceServerError

    port = int(os.environ.get(PORT_ENV) or PERFETTO_PORT)
    try:
        server = TraceServer(trace, origin=origin, port=port).start()
    except TraceServerError as exc:
        print(f"torchscope: {exc}", file=sys.stderr, flush=True)
        return False
    redirect: Optional[Path] = None
    with server:
        print(f"Perfetto: {server.link}", file=link_out or sys.stdout, flush=True)
        if _has_gui_browser():
            say(False, "opening the link in your browser")
            # Never the link itself on the browser's command line (the token would show in
            # `ps`): a private redirect file. A BROWSER command may block until it exits:
            # never let it hold the wait.
            redirect = write_redirect(server.link)
            threading.Thread(
                target=webbrowser.open, args=(redirect.as_uri(),), name="browser", daemon=True
            ).start()
        else:
            say(False, _no_browser_hint(port))
        say(False, f"serving {trace.name} until Perfetto fetches it (at most {timeout_s:g} s)")
        try:
            served = server.wait(timeout_s)
        except KeyboardInterrupt:
            say(False, "interrupted: stopped serving")
            return False
        finally:
            if redirect is not None:
                remove(redirect)
    if served:
        say(False, f"Perfetto fetched the trace ({len(server.data):,} bytes); stopped serving")
        return True
    print(
        f"torchscope: nothing fetched the trace within {timeout_s:g} s; stopped serving. "
        f"The trace is {trace}; open it again with: {open_command(str(trace))}",
        file=sys.stderr,
        flush=True,
    )
    return False
