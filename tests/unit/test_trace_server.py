"""The trace server for the Perfetto UI in a browser: real sockets, on 127.0.0.1 only."""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import port_holder
from torchscope.host.trace_server import PortInUse, TraceServer, TraceServerError, perfetto_link
from torchscope.protocol import PERFETTO_PORT

ORIGIN = "https://ui.perfetto.dev"
TRACE = b"\x1f\x8b" + bytes(range(256)) * 40  # gzip magic, then anything


def request(
    server: TraceServer, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        conn.close()


def refused(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
    return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[TraceServer]:
    trace = tmp_path / "examples.fn.20260101-120000-000.42.pt.trace.json.gz"
    trace.write_bytes(TRACE)
    srv = TraceServer(trace, origin=ORIGIN, port=0).start()
    try:
        yield srv
    finally:
        srv.close()


def test_binds_loopback_only(server: TraceServer) -> None:
    host, port = server.address
    assert (host, port) == ("127.0.0.1", server.port) and port > 0
    # The kernel's view: a listening socket on 127.0.0.1 (0100007F), not on 0.0.0.0 or ::.
    listening = [
        line.split()[1]
        for table in ("/proc/net/tcp", "/proc/net/tcp6")
        if Path(table).exists()
        for line in Path(table).read_text().splitlines()[1:]
        if line.split()[3] == "0A" and int(line.split()[1].rsplit(":", 1)[1], 16) == port
    ]
    assert listening == [f"0100007F:{port:04X}"]


def test_link_and_unguessable_path(server: TraceServer, tmp_path: Path) -> None:
    assert server.url == f"http://127.0.0.1:{server.port}/{server.token}/{server.name}"
    assert server.link == f"{ORIGIN}/#!/?url={server.url}"
    assert perfetto_link(ORIGIN + "/", "http://x/y") == f"{ORIGIN}/#!/?url=http://x/y"
    assert len(server.token) >= 32
    other = TraceServer(TRACE, name="a b+c&d#e.json.gz", port=0)
    assert other.token != server.token
    assert other.name == "a_b_c_d_e.json.gz"  # nothing that would break the #!/?url= link


def test_right_token_serves_the_trace_once_with_cors_headers(server: TraceServer) -> None:
    status, headers, body = request(server, "GET", server.path, {"Origin": ORIGIN})
    assert status == 200
    assert body == TRACE
    assert headers["access-control-allow-origin"] == ORIGIN
    assert headers["cache-control"] == "no-cache"
    assert headers["content-length"] == str(len(TRACE))
    assert server.wait(10) is True  # served: wait returns at once and stops the server
    assert refused(server.port)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/status"),
        ("POST", "/status"),  # the UI's probe for a trace processor on 9001
        ("GET", "/"),
        ("GET", "/wrong-token/trace.json.gz"),
        ("GET", "TOKEN/other-name.json.gz"),
        ("GET", "TOKEN"),
        ("HEAD", "PATH"),
        ("POST", "PATH"),
        ("PUT", "PATH"),
        ("DELETE", "PATH"),
        ("BREW", "PATH"),
        ("OPTIONS", "/status"),
    ],
)
def test_everything_else_is_404(server: TraceServer, method: str, path: str) -> None:
    path = path.replace("PATH", server.path).replace("TOKEN", f"/{server.token}")
    status, headers, body = request(server, method, path, {"Origin": ORIGIN})
    assert status == 404, (method, path)
    assert "access-control-allow-origin" not in headers
    assert TRACE not in body
    assert not server.served
    # Still serving the right path afterwards.
    assert request(server, "GET", server.path)[0] == 200


def test_preflight_is_204_with_private_network_access(server: TraceServer) -> None:
    status, headers, body = request(
        server,
        "OPTIONS",
        server.path,
        {
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Private-Network": "true",
            "Access-Control-Request-Headers": "range",
        },
    )
    assert status == 204 and body == b""
    assert headers["access-control-allow-origin"] == ORIGIN
    assert headers["access-control-allow-private-network"] == "true"
    assert headers["access-control-allow-headers"] == "range"
    assert not server.served  # a preflight is not the fetch


def test_stops_after_a_timeout_without_a_fetch(server: TraceServer) -> None:
    assert server.wait(0.2) is False
    assert refused(server.port)


def test_port_in_use_names_the_process(tmp_path: Path) -> None:
    with port_holder() as (holder, port):
        with pytest.raises(PortInUse) as caught:
            TraceServer(TRACE, port=port).start()
        message = str(caught.value)
        assert f"port {port} on 127.0.0.1 is already in use" in message
        assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message
        assert "127.0.0.1:9001" in message  # why no other port will do


def test_unreadable_trace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceServerError, match="cannot read the trace"):
        TraceServer(tmp_path / "missing.json.gz")


def test_default_port_is_9001() -> None:
    srv = TraceServer(TRACE, name="t.json")
    try:
        srv.start()
    except PortInUse as exc:
        pytest.skip(f"port 9001 is busy on this machine: {exc}")
    try:
        assert srv.address == ("127.0.0.1", PERFETTO_PORT)
        assert srv.link.startswith(f"{ORIGIN}/#!/?url=http://127.0.0.1:9001/{srv.token}/t.json")
        assert request(srv, "GET", srv.path)[2] == TRACE
        assert srv.wait(10)
    finally:
        srv.close()
