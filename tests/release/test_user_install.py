"""A user's install, as a user does it: a fresh virtual environment (nothing of the system's
site-packages) that already has torch and nothing of ours; ``pip install`` of the wheel a
linux-x64 user gets (this machine's platform wheel, its reader cross-built with ziglang; the
pure-Python wheel where the release tools are missing) with its dependencies from the index;
then ``torchscope profile`` on the example and ``torchscope analyze`` on a vendored trace, out
of the checkout and without its PYTHONPATH.

torch is never installed nor touched by our install: pip's log collects no torch and torch's
version and files stay. The installed ``analyze --json`` equals the checkout's on the same
trace (the analysis is deterministic: the checkout is the oracle, not a stored answer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scripts.release import cross_native, wheels

from tests.conftest import EXAMPLES, REPO, SHARED_TRACES

pytestmark = pytest.mark.slow  # a venv with torch from pip's cache, a wheel, a profile (~1 min)

TORCH = "torch==2.13.0"  # the CPU build scripts/setup.sh pins (docs/development.md)
TRACE = SHARED_TRACES / "hta_alexnet_a100.json.gz"


def _wheel(into: Path) -> tuple[Path, bool]:
    """The wheel to install, and whether it carries the native reader."""
    pure = wheels.pure_wheel(into)
    tools = subprocess.run(["bash", str(REPO / "scripts" / "release" / "ensure-tools.sh")],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if tools.returncode != 0:
        return pure, False
    native = into / "native"
    native.mkdir()
    zig = tools.stdout.strip().splitlines()[-1]
    if not cross_native.build_one("linux-x64", [sys.executable], native, zig):
        return pure, False
    [reader] = native.glob("_native*.so")
    return wheels.platform_wheel(pure, reader, "linux-x64", into), True


def _run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "TORCHSCOPE_SELF_CHECK": "1"}
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONSTRAINT"):
        if key in os.environ:
            env[key] = os.environ[key]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_pip_install_into_a_torch_environment_profiles_and_analyzes(tmp_path: Path) -> None:
    if sys.platform != "linux":
        pytest.skip("the platform wheel built here is linux-x64")
    wheel, native = _wheel(tmp_path / "wheels")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python, pip = str(venv / "bin" / "python"), [str(venv / "bin" / "python"), "-m", "pip"]
    got_torch = _run([*pip, "install", "-q", "--disable-pip-version-check", TORCH], tmp_path)
    assert got_torch.returncode == 0, got_torch.stderr[-2000:]
    ours = _run([python, "-c", "import torchscope"], tmp_path)
    assert ours.returncode != 0  # nothing of ours yet
    torch_before = _run([*pip, "show", "-f", "torch"], tmp_path).stdout

    install = _run([*pip, "install", "--disable-pip-version-check", str(wheel)], tmp_path)
    assert install.returncode == 0, install.stderr[-2000:]
    assert "Collecting torch" not in install.stdout, install.stdout
    assert _run([*pip, "show", "-f", "torch"], tmp_path).stdout == torch_before

    where = _run([python, "-c", "import torchscope.ingest.accel as a, torchscope as t;"
                  "print(t.__file__); print(a.native is not None)"], tmp_path)  # fmt: skip
    assert where.returncode == 0, where.stderr
    installed_at, has_native = where.stdout.split()
    assert installed_at.startswith(str(venv)), installed_at
    assert has_native == str(native)

    torchscope = str(venv / "bin" / "torchscope")
    profile = _run([torchscope, "profile", str(EXAMPLES / "matmul_add.py") + "::fn"], tmp_path)
    assert profile.returncode == 0, profile.stdout + profile.stderr[-3000:]
    traces = [line.split(": ", 1)[1] for line in profile.stdout.splitlines()
              if line.startswith("trace: ")]  # fmt: skip
    assert len(traces) == 2, profile.stdout  # the two CPU directives (the CUDA ones skip here)
    assert all(Path(t).is_file() for t in traces)

    analyzed = _run([torchscope, "analyze", "--json", str(TRACE)], tmp_path)
    assert analyzed.returncode == 0, analyzed.stderr[-2000:]
    checkout = subprocess.run(
        [sys.executable, "-m", "torchscope", "analyze", "--json", str(TRACE)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    mine, theirs = json.loads(analyzed.stdout), json.loads(checkout.stdout)
    assert mine["verdict"] == theirs["verdict"]
    assert mine == theirs
