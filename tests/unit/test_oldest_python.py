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


_ROUND_TRIP = """
from torchscope import protocol as p
m = p.Measurements(1.0, [2.0], 0.5, line_us={3: [1.0]}, peaks=p.Peaks({"float32": 1.0}, None))
r = p.ProfileResult(1, "/t", m, 2, inputs=p.Inputs("capture", "/c", batch=0))
run = p.RunRequest(2, "/f.py", "f", None, "/t", targets=[p.RunTarget("/f.py", "f", "/t")])
report = p.TargetReport("/f.py", "f", callers=[("/m.py", 1, 2)], profile=r)
for msg in (r, run, p.CompareResult(3, r, r), p.RunResult(4, "finished", targets=[report])):
    assert p.from_builtins(type(msg), p.to_builtins(msg, finite=False)) == msg, msg
"""


def test_the_codec_round_trips_typed_messages_on_python_3_9() -> None:
    """The worker decodes its requests in the user's interpreter: ``from_builtins`` reads the
    annotations (``list[float]``, ``Optional``, ``tuple[str, int, int]``) on 3.9 too."""
    python = _python39()
    if python is None:
        pytest.skip("no CPython 3.9 on PATH or under ~/.pyenv")
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), "PYTHONNOUSERSITE": "1"}
    done = subprocess.run(
        [python, "-c", _ROUND_TRIP], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
