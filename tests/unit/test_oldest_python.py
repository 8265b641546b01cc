"""The analysis runs on the oldest Python the package claims (``requires-python``: 3.9), with
the same report: `torchscope analyze --json` under CPython 3.9 (the pure-Python readers and
sweeps, no C extension built for it) is byte-identical to the snapshot on real traces.

Python 3.9 has no ``X | Y`` at run time and no start argument to ``array.index``; both were
once in the analysis, unseen by a test run on a newer Python. Skipped where no 3.9 is found
(on ``PATH`` or under pyenv)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = REPO / "tests" / "data" / "snapshots"
TRACES = (
    "hta_ddp_nccl_a100_rank0.json.gz",
    "hta_recsys_a100_rank0.json.gz",
    "kineto_tiny_mlp_legacy_v100.json",
)


def _python39() -> str | None:
    """A CPython 3.9 that runs (a pyenv shim on ``PATH`` may name a version not installed)."""
    pyenv = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9.*/bin/python3")))
    for candidate in [*reversed(pyenv), shutil.which("python3.9")]:
        if candidate is None:
            continue
        check = "import sys; sys.exit(sys.version_info[:2] != (3, 9))"
        if subprocess.run([candidate, "-c", check], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("name", TRACES)
def test_analyze_json_on_python_3_9_is_the_snapshot(name: str) -> None:
    python = _python39()
    if python is None:
        pytest.skip("no CPython 3.9 on PATH or under ~/.pyenv")
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), "PYTHONNOUSERSITE": "1"}
    done = subprocess.run(
        [python, "-m", "torchscope", "analyze", "--json", f"tests/data/traces/{name}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == (SNAPSHOTS / f"{name}.report.json").read_text(encoding="utf-8")
