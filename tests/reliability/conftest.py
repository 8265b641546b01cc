"""Reliability tests: the real worker, the real CLI, the real server (pytest-lsp).

Every process these tests start carries ``TORCHSCOPE_TEST_MARK=<uuid>`` in its environment,
and so does everything those start in turn. After each test, none may remain except a running
language server and its own worker and guardian.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.reliability.cases import write_cases

MARK_VAR = "TORCHSCOPE_TEST_MARK"
MARK = uuid.uuid4().hex
os.environ[MARK_VAR] = MARK  # inherited by the CLI and server processes the tests start

ENV = {**os.environ, "PYTHONPATH": str(REPO / "server")}
TORCHSCOPE = [sys.executable, "-m", "torchscope"]
#: Kept alive between tests: the server and its worker and guardian, and its spare analysis
#: child (``host/trace_analysis.py``).
PERSISTENT = (
    "torchscope serve",
    "torchscope.worker.main",
    "torchscope.host.guardian",
    "torchscope.host.trace_analysis",
)


def _read(pid: str, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def _state(pid: str) -> str:
    stat = _read(pid, "stat").decode(errors="replace")
    return stat[stat.rfind(")") + 2 :][:1]


def marked_processes(keep_servers: bool = True) -> list[tuple[int, str]]:
    """(pid, command line) of live processes carrying this session's marker."""
    needle = f"{MARK_VAR}={MARK}".encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        if needle not in _read(pid, "environ").split(b"\0") or _state(pid) in ("Z", "X", ""):
            continue
        cmdline = _read(pid, "cmdline").replace(b"\0", b" ").decode(errors="replace")
        if keep_servers and any(mark in cmdline for mark in PERSISTENT):
            continue
        found.append((int(pid), cmdline))
    return found


def wait_no_leftovers(timeout_s: float = 5.0, keep_servers: bool = True) -> list[tuple[int, str]]:
    deadline = time.monotonic() + timeout_s
    while True:
        left = marked_processes(keep_servers)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    yield
    left = wait_no_leftovers()
    for pid, _ in left:  # do not let one failure poison the next tests
        with contextlib.suppress(OSError):
            os.kill(pid, 9)
    assert not left, f"processes left behind: {left}"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cases(tmp_path_factory.mktemp("cases"))


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def profile_cli(target: str, *options: str, timeout: float = 240, python: str | None = None) -> Run:
    """``torchscope profile`` in a subprocess, quick settings."""
    command = [*TORCHSCOPE, "profile", target, "--steps", "2", "--warmup", "1", "-q"]
    if python:
        command += ["--python", python]
    started = time.monotonic()
    run = subprocess.run(
        [*command, *options],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    return Run(run.returncode, run.stdout, run.stderr, time.monotonic() - started)
