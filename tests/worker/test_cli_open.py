"""``torchscope profile|analyze … --open``: the trace served once to the Perfetto UI.

Real subprocesses and real sockets on 127.0.0.1. The port comes from ``TORCHSCOPE_PERFETTO_PORT``
(a free one), so the test does not fight other runs for 9001; the trace server's own tests cover
the default port.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_TRACES, port_holder

TORCHSCOPE = (sys.executable, "-m", "torchscope")
FAKE_BROWSER = Path(__file__).with_name("fake_browser.py")
SMALL = "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))"
ORIGIN = "https://ui.perfetto.dev"
LINK = re.compile(
    r"^Perfetto: (https://ui\.perfetto\.dev/#!/\?url=(http://127\.0\.0\.1:(\d+)/\S+))$"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env(port: int, browser: str | None = None) -> dict[str, str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "SSH_CONNECTION")
    }
    base.update(
        PYTHONPATH=str(REPO / "server"),
        TORCHSCOPE_PERFETTO_PORT=str(port),
        NO_PROXY="127.0.0.1",
        no_proxy="127.0.0.1",
    )
    if browser is not None:
        base["BROWSER"] = browser
    return base


def wait_for_file(path: Path, timeout: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} not written within {timeout} s"
        time.sleep(0.05)
    data: dict[str, object] = json.loads(path.read_text())
    return data


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    source = SHARED_TRACES / "hta_alexnet_a100.json.gz"
    copy = tmp_path / "alexnet run.json.gz"  # a space: the served name is made URL-safe
    shutil.copyfile(source, copy)
    return copy


@pytest.fixture
def running() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_profile_open_serves_the_trace_to_the_browser(trace_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    report = tmp_path / "browser.json"
    browser = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE_BROWSER))} %s {shlex.quote(str(report))}"
    run = subprocess.run(
        [
            *TORCHSCOPE,
            *("profile", "examples/matmul_add.py::fn", "--call", SMALL, "--steps", "2"),
            *("--trace-dir", str(trace_dir), "-q", "--open", "--open-timeout", "120"),
        ],
        cwd=REPO,
        env=env(port, browser),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    [trace_line] = [line for line in lines if line.startswith("trace: ")]
    trace_file = Path(trace_line.removeprefix("trace: "))
    [link_line] = [line for line in lines if line.startswith("Perfetto: ")]
    assert lines.index(link_line) > lines.index(trace_line)
    match = LINK.match(link_line)
    assert match and int(match.group(3)) == port, link_line
    assert "open it in Perfetto:" not in run.stdout  # --open does it
    assert "Perfetto fetched the trace" in run.stderr

    fetched = wait_for_file(report, 30)
    assert fetched["url"] == match.group(2)
    # The browser got a private (0600) redirect page, never the link with its token in argv.
    assert fetched["opened"].startswith("file://") and fetched["page_mode"] == 0o600
    assert match.group(2) not in fetched["opened"]
    assert fetched["status"] == 200 and fetched["status_probe"] == 404
    assert fetched["allow_origin"] == ORIGIN and fetched["cache_control"] == "no-cache"
    data = trace_file.read_bytes()
    assert fetched["size"] == len(data)
    assert fetched["sha256"] == hashlib.sha256(data).hexdigest()

    # The trace says which function and when; the private folder keeps no temporary files.
    doc = json.loads(gzip.decompress(data))
    assert re.fullmatch(r"matmul_add\.py::fn · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", doc["traceName"])
    assert [p.name for p in trace_dir.iterdir()] == [trace_file.name]
    # And the server is gone.
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_analyze_open_prints_the_link_before_waiting(
    trace: Path, running: list[subprocess.Popen[str]]
) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [*TORCHSCOPE, "analyze", str(trace), "--open"],
        cwd=REPO,
        env=env(port),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    running.append(proc)
    assert proc.stdout is not None and proc.stderr is not None
    link = None
    for line in proc.stdout:
        if line.startswith("Perfetto: "):
            link = LINK.match(line.strip())
            break
    assert link is not None, "no 'Perfetto: <link>' line on stdout"
    url = link.group(2)
    assert url.endswith("/alexnet_run.json.gz")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with pytest.raises(urllib.error.HTTPError) as wrong:
        opener.open(url.replace("/alexnet_run", "/other"), timeout=10)
    assert wrong.value.code == 404
    with opener.open(urllib.request.Request(url, headers={"Origin": ORIGIN}), timeout=10) as r:
        assert r.read() == trace.read_bytes()
    assert proc.wait(timeout=30) == 0
    stderr = proc.stderr.read()
    assert "no graphical browser here" in stderr and "Perfetto fetched the trace" in stderr


def test_analyze_open_times_out_and_frees_the_port(trace: Path) -> None:
    port = free_port()
    run = subprocess.run(
        [*TORCHSCOPE, "analyze", str(trace), "--json", "--open", "--open-timeout", "0.5"],
        cwd=REPO,
        env=env(port),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    json.loads(run.stdout)  # with --json, stdout stays one JSON object; the link is on stderr
    assert LINK.match(next(li for li in run.stderr.splitlines() if li.startswith("Perfetto: ")))
    assert "nothing fetched the trace within 0.5 s" in run.stderr
    assert f"torchscope analyze {shlex.quote(str(trace))} --open" in run.stderr
    with socket.socket() as s:  # free again
        s.bind(("127.0.0.1", port))


def test_analyze_open_port_in_use_says_who_holds_it(trace: Path) -> None:
    with port_holder() as (holder, port):
        run = subprocess.run(
            [*TORCHSCOPE, "analyze", str(trace), "--open"],
            cwd=REPO,
            env=env(port),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use by pid {holder.pid}" in run.stderr
    assert "Perfetto: " not in run.stdout


def test_without_open_the_cli_prints_the_command(trace: Path) -> None:
    run = subprocess.run(
        [*TORCHSCOPE, "analyze", str(trace)],
        cwd=REPO,
        env=env(free_port()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert f"trace: {trace}" in run.stdout
    assert f"open it in Perfetto: torchscope analyze {shlex.quote(str(trace))} --open" in run.stdout
