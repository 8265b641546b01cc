"""Serve one trace to the Perfetto UI in a browser (DESIGN.md §5), stdlib only (the port,
origin and timeout are ``protocol.PERFETTO_*``: the CLI's flags default to them).

The Perfetto UI (``https://ui.perfetto.dev``) may fetch a trace with ``#!/?url=…``, but its
Content-Security-Policy allows exactly one plain-http origin: ``http://127.0.0.1:9001``. So the
trace is served there, and only there:

- bound to ``127.0.0.1`` (never another address), port 9001;
- at an unguessable path ``/<token>/<name>``; every other path — including ``/status``, which the
  UI probes for a trace processor — and every other method answers 404;
- ``GET`` on the path answers 200 with ``Access-Control-Allow-Origin: <Perfetto origin>`` and
  ``Cache-Control: no-cache``; the CORS/Private-Network-Access preflight (``OPTIONS``) on the path
  answers 204 with ``Access-Control-Allow-Private-Network: true``;
- it stops after the trace was fetched once, or after a timeout.

The VS Code extension has a TypeScript twin (``extension/src/traceServer.ts``) with the same
rules; change both together.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Optional, Union
from urllib.parse import quote, urlsplit

from torchscope.files import read_regular
from torchscope.protocol import PERFETTO_ORIGIN, PERFETTO_PORT, PERFETTO_TIMEOUT_S

TRACE_SERVE_LIMIT = 8 << 30
"""The largest trace file served (it is held whole to serve it): a bound on a file that
grows while it is read, not on any real trace."""

#: The only plain-http origin the Perfetto UI's CSP lets it fetch from: 127.0.0.1, port 9001.
LOOPBACK = "127.0.0.1"


class TraceServerError(RuntimeError):
    """The trace cannot be served; the message says why and what to do."""


class PortInUse(TraceServerError):
    """Port 9001 on 127.0.0.1 is taken by another process."""


def perfetto_link(origin: str, trace_url: str) -> str:
    """The Perfetto UI link that opens ``trace_url``: ``<origin>/#!/?url=<trace_url>``."""
    return f"{origin.rstrip('/')}/#!/?url={trace_url}"


def safe_name(name: str) -> str:
    """A URL-safe file name (Perfetto shows it; ``+``, ``&`` and ``#`` would break the link)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "trace"
    return cleaned[:120]


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on ``port`` (any address), from ``/proc/net/tcp{,6}`` (Linux)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != "0A":  # 0A = LISTEN
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def describe_port_owner(port: int) -> Optional[str]:
    """``pid 123 (python3 -m http.server 9001)`` for the process listening on ``port``, if this
    user may see it (Linux only); ``None`` otherwise."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = {os.readlink(fd) for fd in (proc / "fd").iterdir()}
        except OSError:
            continue
        if links & wanted:
            try:
                raw = (proc / "cmdline").read_bytes()
                cmdline = raw.replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmdline = "?"
            return f"pid {proc.name} ({cmdline[:160]})"
    return None


def port_in_use_message(port: int, origin: str) -> str:
    owner = describe_port_owner(port)
    if owner is not None:
        who = f"by {owner}; stop it (kill {owner.split()[1]}) and try again"
    else:
        who = (
            f"by another process; find it with `ss -ltnp 'sport = :{port}'` or "
            f"`lsof -iTCP:{port} -sTCP:LISTEN`, stop it and try again"
        )
    return (
        f"cannot serve the trace: port {port} on {LOOPBACK} is already in use {who}. "
        f"The Perfetto UI ({origin}) only fetches plain-http traces from "
        f"http://{LOOPBACK}:{PERFETTO_PORT} (the port is often held by `trace_processor_shell "
        "--httpd` or by an earlier `--open` still waiting). Or open the trace file with the "
        "UI's 'Open trace file', or use 'Open trace' in VS Code, which needs no port."
    )


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the CLI and the daemon say what matters themselves

    def _is_trace_path(self) -> bool:
        return hmac.compare_digest(urlsplit(self.path).path.encode(), self.server.trace_path_bytes)

    def _send_empty(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def not_found(self) -> None:
        self._send_empty(404, {"Cache-Control": "no-cache"})

    def do_GET(self) -> None:
        if not self._is_trace_path():
            self.not_found()
            return
        data = self.server.data
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Access-Control-Allow-Origin", self.server.origin)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:  # the client went away mid-transfer: not served
            return
        self.server.on_served()

    def do_OPTIONS(self) -> None:
        if not self._is_trace_path():
            self.not_found()
            return
        requested = self.headers.get("Access-Control-Request-Headers")
        headers = {
            "Access-Control-Allow-Origin": self.server.origin,
            "Access-Control-Allow-Methods": "GET",
            "Access-Control-Allow-Private-Network": "true",
            "Access-Control-Max-Age": "60",
            "Cache-Control": "no-cache",
        }
        if requested:
            headers["Access-Control-Allow-Headers"] = requested
        self._send_empty(204, headers)

    def __getattr__(self, name: str) -> Callable[[], None]:
        # Every other method (HEAD, POST — the UI's ``POST /status`` probe —, PUT, …) is a 404,
        # not the base class's 501.
        if name.startswith("do_"):
            return self.not_found
        raise AttributeError(name)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # SO_REUSEADDR lets a rerun bind while an old connection lingers in TIME_WAIT (Linux and
    # macOS still refuse a port someone listens on); on Windows it would allow stealing a port.
    allow_reuse_address = sys.platform != "win32"

    def __init__(
        self, port: int, data: bytes, trace_path: str, origin: str, on_served: Callable[[], None]
    ) -> None:
        self.data = data
        self.trace_path_bytes = trace_path.encode()
        self.origin = origin
        self.on_served = on_served
        super().__init__((LOOPBACK, port), _Handler)


class TraceServer:
    """Serves one trace once from ``http://127.0.0.1:<port>/<token>/<name>``.

    ``start()`` binds (raising ``PortInUse`` with the owner when it can tell), ``wait(timeout)``
    returns whether the trace was fetched, ``close()`` stops; also a context manager.
    """

    def __init__(
        self,
        trace: Union[Path, bytes],
        name: Optional[str] = None,
        origin: str = PERFETTO_ORIGIN,
        port: int = PERFETTO_PORT,
    ) -> None:
        if isinstance(trace, Path):
            try:  # a regular file only: a FIFO or a device is refused, not read forever
                self.data = read_regular(trace, TRACE_SERVE_LIMIT, "trace file")
            except OSError as exc:
                raise TraceServerError(f"cannot read the trace {trace}: {exc}") from exc
            name = name or trace.name
        else:
            self.data = trace
        self.name = safe_name(name or "trace.json")
        self.origin = origin.rstrip("/")
        self.port = port
        self.token = secrets.token_urlsafe(24)
        self._served = threading.Event()
        self._httpd: Optional[_HTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def path(self) -> str:
        return f"/{self.token}/{quote(self.name)}"

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}{self.path}"

    @property
    def link(self) -> str:
        """The Perfetto UI link that loads this trace."""
        return perfetto_link(self.origin, self.url)

    @property
    def served(self) -> bool:
        return self._served.is_set()

    def start(self) -> TraceServer:
        if self._httpd is not None:
            return self
        try:
            httpd = _HTTPServer(self.port, self.data, self.path, self.origin, self._served.set)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse(port_in_use_message(self.port, self.origin)) from exc
            raise TraceServerError(
                f"cannot listen on {LOOPBACK}:{self.port} to serve the trace: {exc}"
            ) from exc
        self._httpd = httpd
        self.port = httpd.server_address[1]  # the real port when 0 (tests) was asked for
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"torchscope-trace-server-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    @property
    def address(self) -> tuple[str, int]:
        """The bound address (``127.0.0.1``, port)."""
        if self._httpd is None:
            raise TraceServerError("the trace server is not running")
        host, port = self._httpd.socket.getsockname()[:2]
        return str(host), int(port)

    def wait(self, timeout: Optional[float] = PERFETTO_TIMEOUT_S) -> bool:
        """Block until the trace was fetched (True) or ``timeout`` passed (False); then stop."""
        try:
            return self._served.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> TraceServer:
        return self.start()

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        with contextlib.suppress(Exception):
            self.close()
