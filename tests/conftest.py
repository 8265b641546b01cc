"""Shared paths for all test suites."""

import os
import subprocess
import sys
import tempfile
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

#: Every contradiction any of them finds is also appended here (issue 55): the codec checks
#: each report and sweep it encodes or decodes, so a report changed after its analysis, one a
#: server child answered with an error message, or one decoded from ``--json`` or an LSP/MCP
#: reply in a client fails the test that made it, whatever the test asserts
#: (``_no_self_contradiction`` below).
_fd, _SELF_CHECK_LOG = tempfile.mkstemp(prefix="torchscope-self-check-", suffix=".log")
os.close(_fd)
os.environ["TORCHSCOPE_SELF_CHECK_LOG"] = _SELF_CHECK_LOG


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's self-check log goes with the session."""
    del config
    Path(_SELF_CHECK_LOG).unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _no_self_contradiction() -> Iterator[None]:
    """Fail the test if any report or sweep it produced, in this process or a child,
    contradicted itself (``analysis/verdict/consistency.py``)."""
    log = Path(_SELF_CHECK_LOG)
    start = log.stat().st_size if log.exists() else 0
    yield
    if log.exists() and log.stat().st_size > start:
        with log.open(encoding="utf-8") as f:
            f.seek(start)
            found = f.read().strip()
        pytest.fail(f"a report this test produced contradicts itself:\n{found}", pytrace=False)


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
