"""The suite's hook (``tests/conftest.py``, issue 55) fails a test whose report contradicted
itself even when the test swallowed the error, as a server that answers a failed request with
an error message and keeps serving does: run in a pytest of its own, with the suite's conftest
as its plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

INNER = """
from dataclasses import replace

from torchscope.analysis import Measurements, analyze_trace
from torchscope.protocol import to_builtins

TRACE = {trace!r}


def test_swallows_the_error():
    report = analyze_trace(TRACE, Measurements(0.0, [3_100.0] * 3, 1.1))
    bad = replace(report, verdict=replace(report.verdict, headline="x (0.5× faster)"))
    try:
        to_builtins(bad)  # the --json / LSP / MCP edge
    except AssertionError:
        pass  # a server answers with an error message and keeps serving


def test_clean():
    to_builtins(analyze_trace(TRACE, Measurements(0.0, [3_100.0] * 3, 1.1)))
"""


def test_the_hook_fails_a_test_whose_report_contradicted_itself(tmp_path: Path) -> None:
    trace = REPO / "tests" / "data" / "cpu" / "fn512.json.gz"
    (tmp_path / "test_inner.py").write_text(INNER.format(trace=str(trace)), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_inner.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert "2 passed, 1 error" in out, out  # the swallowing test itself passes, then errors
    assert "ERROR at teardown of test_swallows_the_error" in out, out
    assert "0.5× faster is not faster" in out, out
