"""What an installed wheel knows: ``explain_finding``'s findings reference ships in the package
(``torchscope/report/findings.md``, package data), so a wheel installed in a fresh venv
explains a finding with its whole section, not only its title."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # builds the wheel, C extension included (~1 min on 2 cores)

EXPLAIN = (
    "import torchscope.report.mcp_summary as m\n"
    "section, where = m.explain('sync')\n"
    "print(m.__file__)\n"
    "print(where)\n"
    "print(section)\n"
)


def _source_tree(into: Path) -> Path:
    """What ``pip wheel`` reads, copied (symlinks kept) so the build leaves the checkout clean."""
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build")
    shutil.copytree(REPO / "server", into / "server", symlinks=True, ignore=skip)
    shutil.copytree(REPO / "docs", into / "docs", ignore=shutil.ignore_patterns("images"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, into / name)
    return into


def test_an_installed_wheel_explains_a_finding_with_its_section(tmp_path: Path) -> None:
    source = _source_tree(tmp_path / "src")
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheels), str(source)],
        check=True, timeout=600, capture_output=True,
    )  # fmt: skip
    [wheel] = wheels.glob("torchscope-*.whl")
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120
    )
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "-q", str(wheel)],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    # Out of the checkout, and without its PYTHONPATH: the installed package, nothing else.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    run = subprocess.run(
        [python, "-c", EXPLAIN], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    where_from, docs, *section = run.stdout.splitlines()
    assert where_from.startswith(str(venv)), where_from  # the wheel's copy, not the checkout's
    assert docs == "docs/findings.md#sync"
    assert section[0] == "### sync"
    assert "An explicit synchronising call" in "\n".join(section), section  # the text, not the title
