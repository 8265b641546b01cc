"""The ``.vsix`` carries the fast reader for every CPython this machine has (one build per
version, ``scripts/vscode/build_native.py``), and each interpreter imports its own build
from the bundle and reads a trace with it, as a user's interpreter would."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from scripts.vscode import build_native

REPO = Path(__file__).resolve().parents[2]
VSIX = REPO / "build" / "torchscope.vsix"
TRACE = REPO / "tests" / "data" / "traces" / "hta_alexnet_a100.json.gz"

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("cc") is None,
    reason="no npm or no C compiler: scripts/setup.sh builds no .vsix with the C part",
)

_READ = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from torchscope.ingest import accel, load_trace; "
    "assert accel.native is not None, 'the bundled build did not load'; "
    "print(len(load_trace(sys.argv[2]).ops))"
)


def test_every_cpython_here_imports_its_build_from_the_vsix(tmp_path: Path) -> None:
    assert VSIX.exists(), "build/torchscope.vsix is missing: run scripts/setup.sh"
    with zipfile.ZipFile(VSIX) as z:
        names = [n for n in z.namelist() if "/bundled/tool/" in n]
        z.extractall(tmp_path, names)
    init = next(n for n in names if n.endswith("/bundled/tool/torchscope/__init__.py"))
    tool = tmp_path / init.removesuffix("/torchscope/__init__.py")
    tried = []
    for candidates in build_native.interpreters():
        found = build_native.probe(candidates)
        if found is None:
            continue
        python, _, suffix, _, version = found
        assert (tool / "torchscope" / "ingest" / f"_native{suffix}").exists(), version
        out = subprocess.run(
            [python, "-c", _READ, str(tool), str(TRACE)], capture_output=True, text=True
        )
        assert out.returncode == 0, (version, out.stderr[-2000:])
        assert out.stdout.strip() == "359", version
        tried.append(version)
    assert tried, "no CPython found to try"
