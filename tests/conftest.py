"""Shared paths for all test suites."""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "workspace"
EXAMPLES = REPO / "examples"
#: Real GPU traces, vendored with their provenance and licenses (tests/data/traces/SOURCES.md).
SHARED_TRACES = REPO / "tests" / "data" / "traces"

#: The workspaces the editors' end-to-end tests open hold a user's own tests (the run pick
#: lists them); they import the workspace's modules and are not this suite's to collect.
collect_ignore_glob = ["vscode/workspace/*"]

#: Every analysis in the suite, in this process and in the workers and analysis children it
#: starts, raises when its report contradicts itself (``analysis/verdict/consistency.py``, issue 40).
os.environ["TORCHSCOPE_SELF_CHECK"] = "1"


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    return folder


@contextmanager
def port_holder() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Another process listening on a free loopback port: ``(process, port)``; killed after."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        yield holder, int(holder.stdout.readline())
    finally:
        holder.kill()
        holder.wait()
