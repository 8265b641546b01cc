"""``--open`` for ``torchscope profile`` and ``torchscope analyze``: the trace in the Perfetto UI.

Serves the trace once from ``http://127.0.0.1:9001`` (``host/trace_server.py``), prints
``Perfetto: <link>``, tries to open a browser, and returns after the UI fetched the trace or
after ``--open-timeout`` seconds. Without ``--open`` the CLI prints the command that does it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Optional, TextIO

from torchscope.host.browser import remove, write_redirect
from torchscope.host.trace_server import (
    DEFAULT_ORIGIN,
    DEFAULT_TIMEOUT_S,
    PERFETTO_PORT,
    TraceServer,
    TraceServerError,
)

#: Overrides for tests and self-hosted UIs (the public UI only fetches from 127.0.0.1:9001).
ORIGIN_ENV = "TORCHSCOPE_PERFETTO_ORIGIN"
PORT_ENV = "TORCHSCOPE_PERFETTO_PORT"


def add_open_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--open",
        action="store_true",
        help="open the trace in the Perfetto UI in your browser (served once from 127.0.0.1:9001)",
    )
    parser.add_argument(
        "--open-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"with --open: stop serving after S seconds (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument(
        "--perfetto-origin",
        default=os.environ.get(ORIGIN_ENV) or DEFAULT_ORIGIN,
        metavar="URL",
        help=f"the Perfetto UI to open (default {DEFAULT_ORIGIN}, or ${ORIGIN_ENV})",
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


def _say(text: str) -> None:
    print(f"[torchscope] {text}", file=sys.stderr, flush=True)


def open_in_perfetto(
    trace: Path, origin: str, timeout_s: float, link_out: Optional[TextIO] = None
) -> bool:
    """Serve ``trace`` for the Perfetto UI; True once it was fetched, False on error/timeout.

    ``Perfetto: <link>`` goes to ``link_out`` (stdout by default) before the wait.
    """
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
            _say("opening the link in your browser")
            # Never the link itself on the browser's command line (the token would show in
            # `ps`): a private redirect file. A BROWSER command may block until it exits:
            # never let it hold the wait.
            redirect = write_redirect(server.link)
            threading.Thread(
                target=webbrowser.open, args=(redirect.as_uri(),), name="browser", daemon=True
            ).start()
        else:
            ssh = os.environ.get("SSH_CONNECTION")
            _say(
                "no graphical browser here: open the link in a browser on this machine"
                + (
                    f" — over SSH, forward the port first (ssh -L {port}:127.0.0.1:{port} "
                    f"{ssh.split()[2] if ssh and len(ssh.split()) > 2 else '<host>'})"
                    if ssh
                    else ""
                )
            )
        _say(f"serving {trace.name} until Perfetto fetches it (at most {timeout_s:g} s)")
        try:
            served = server.wait(timeout_s)
        except KeyboardInterrupt:
            _say("interrupted: stopped serving")
            return False
        finally:
            if redirect is not None:
                remove(redirect)
    if served:
        _say(f"Perfetto fetched the trace ({len(server.data):,} bytes); stopped serving")
        return True
    print(
        f"torchscope: nothing fetched the trace within {timeout_s:g} s; stopped serving. "
        f"The trace is {trace}; open it again with: {open_command(str(trace))}",
        file=sys.stderr,
        flush=True,
    )
    return False
