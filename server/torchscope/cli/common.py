"""What the subcommands share: exit codes, the job-option flags (``torchscope/flags.py``, shared
with the notebook's magic), the job service a command runs its jobs through
(``open_service``: ``host/session.py``), the job kind a flag chose, and ``--open`` (the trace
in the Perfetto UI).

Building the parser imports only ``protocol``: the host (workers, the trace server) is
imported inside the functions that run a job, so ``torchscope analyze`` never pays for it.
``--open`` serves the trace once from ``http://127.0.0.1:9001`` (``host/trace_server.py``),
prints ``Perfetto: <link>``, tries to open a browser, and returns after the UI fetched the
trace or after ``--open-timeout`` seconds. Without ``--open`` the CLI prints the command that
does it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, TextIO

from torchscope.flags import add_job_options as add_job_options
from torchscope.flags import add_kind_flags as add_kind_flags
from torchscope.flags import add_option_flags as add_option_flags
from torchscope.flags import chosen_kinds as chosen_kinds
from torchscope.flags import job_options as job_options
from torchscope.flags import run_options as run_options
from torchscope.protocol import (
    PERFETTO_ORIGIN,
    PERFETTO_PORT,
    PERFETTO_TIMEOUT_S,
)
from torchscope.protocol import PERFETTO_ORIGIN_ENV as ORIGIN_ENV
from torchscope.protocol import PERFETTO_PORT_ENV as PORT_ENV

if TYPE_CHECKING:
    from typing_extensions import TypeAlias

    from torchscope.host.profile_run import HostJob, ProfileFailure, ProfileOutcome
    from torchscope.host.session import JobService
    from torchscope.protocol import Output, Progress
    from torchscope.source.targets import Target

    #: What ``add_subparsers`` returns: each subcommand module adds its parser to it.
    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

def print_failure(file: str, failure: ProfileFailure) -> int:
    """A failed job on stderr: ``torchscope: file:line: message`` and the user's traceback;
    returns the exit status."""
    print(f"torchscope: {failure.where(file)}: {failure.message}", file=sys.stderr)
    if failure.traceback:
        print(failure.traceback, file=sys.stderr)
    return EXIT_FAILED


def render_text(outcome: ProfileOutcome, listing: str, open_hint: bool = True) -> str:
    """``report/outcome_text.py``'s text report (imported here on use: the parser stays
    cheap)."""
    from torchscope.report.outcome_text import render_text as render

    return render(outcome, listing, open_hint)


def open_command(trace: str) -> str:
    """The exact command that opens ``trace`` in the Perfetto UI (``report/outcome_text.py``)."""
    from torchscope.report.outcome_text import open_command as command

    return command(trace)


def say(quiet: bool, text: str) -> None:
    """A progress line on stderr (``[torchscope] …``), unless ``--quiet``."""
    if not quiet:
        print(f"[torchscope] {text}", file=sys.stderr, flush=True)





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
    from torchscope.source.targets import TargetError
    from torchscope.source.targets import read_target as read

    try:
        return read(spec)
    except TargetError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return None


def open_service(args: argparse.Namespace, workspace: Optional[str] = None) -> JobService:
    """The job service (``host/session.py``) for ``--python`` and ``--trace-dir``, its options
    the job-option flags (``workspace``: where captures live, default this folder)."""
    from torchscope.host.session import JobService

    return JobService(
        args.python,
        args.trace_dir.resolve() if args.trace_dir else None,
        cwd=str(Path.cwd()),
        on_worker_stderr=lambda line: None if args.quiet else print(line, file=sys.stderr),
        defaults=job_options(args, workspace or str(Path.cwd())),
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


def chosen_kind(args: argparse.Namespace) -> HostJob[Any, Any]:
    """A plain profile, or the job kind whose flag was given (``--compare-compile``)."""
    from torchscope.host.job_kinds import host_kinds
    from torchscope.protocol import ProfileRequest

    chosen = chosen_kinds(args)
    return host_kinds()[chosen[0][1] if chosen else ProfileRequest.TYPE]


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
