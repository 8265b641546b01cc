"""``torchscope profile … --sweep N=…``: the guide's central lesson, measured across sizes.

``fn`` at N = 16, 64, 256, 1024 on the CPU: the compute share rises with N, the output names
the size where ``fn`` turns compute-bound, and the SVG chart exists, parses as XML and has one
point per size. ``OMP_NUM_THREADS=1`` for the reason given in ``test_compile_compare.py``: on a
shared 2-core machine a 2-thread GEMM can wait milliseconds for its second thread, which would
make a small size look compute-bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

SIZES = [16, 64, 256, 1024]
TEMPLATE = "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}, {N}))"
SVG = "{http://www.w3.org/2000/svg}"


def torchscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "server"), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    traces = tmp_path_factory.mktemp("sweep-traces")
    run = torchscope(
        "profile",
        "examples/matmul_add.py::fn",
        "--call",
        TEMPLATE,
        "--sweep",
        "N=" + ",".join(map(str, SIZES)),
        "--steps",
        "3",
        "--trace-dir",
        str(traces),
        "--json",
        "-q",
    )
    assert run.returncode == 0, run.stderr
    [line] = run.stdout.strip().splitlines()
    data: dict[str, Any] = json.loads(line)
    data["_traces"] = traces
    return data


def test_compute_share_rises_with_size_and_names_the_crossover(swept: dict[str, Any]) -> None:
    sweep = swept["sweep"]
    points = sweep["points"]
    assert [p["N"] for p in points] == SIZES
    for p in points:
        assert {"N", "median_us", "cpu_us", "device_us", "compute_share", "verdict"} <= set(p)
    shares = [p["compute_share"] for p in points]
    assert shares == sorted(shares), shares
    assert points[0]["verdict"] == "overhead-bound", points[0]
    assert points[-1]["verdict"] == "compute-bound", points[-1]
    crossover = sweep["crossover"]
    # Read off the stable rows' own verdicts (an unstable row's may be the load's, issue 54):
    # the smallest size from which every larger stable row is past the overhead.
    counted = [p for p in points if p.get("stable", True)]
    expected = None
    for p in reversed(counted):
        if p["verdict"] == "overhead-bound":
            break
        expected = p["N"]
    if expected == counted[0]["N"]:
        expected = None
    assert crossover == expected, points
    if len(counted) == len(points):  # all stable: the overhead-bound smallest size has one
        assert crossover in SIZES[1:]
    times = [p["median_us"] for p in points]
    assert times == sorted(times), times
    # The rest of the object is the largest size's profile.
    assert swept["call"] == TEMPLATE.replace("{N}", "1024")
    assert swept["verdict"]["id"] == "compute-bound"


def test_the_chart_is_svg_with_one_point_per_size(swept: dict[str, Any]) -> None:
    chart = Path(swept["sweep"]["chart_path"])
    assert chart.parent == swept["_traces"] and chart.suffix == ".svg"
    root = ET.parse(chart).getroot()
    assert root.tag == f"{SVG}svg"
    points = [c for c in root.iter(f"{SVG}circle") if c.get("class") == "point"]
    assert [int(c.get("data-n", "0")) for c in points] == SIZES
    [marker] = [line for line in root.iter(f"{SVG}line") if line.get("class") == "crossover"]
    assert marker is not None
    assert f"N={swept['sweep']['crossover']}" in chart.read_text()


def test_a_call_without_the_placeholder_is_refused_with_a_template(tmp_path: Path) -> None:
    run = torchscope(
        "profile",
        "examples/matmul_add.py::fn",
        "--call",
        "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))",
        "--sweep",
        "N=8,16",
        "--trace-dir",
        str(tmp_path),
        "-q",
    )
    assert run.returncode == 1
    assert "has no {N} placeholder" in run.stderr
    assert "fn(torch.randn({N}, {N}), torch.randn({N}, {N}), torch.randn({N}, {N}))" in run.stderr


def test_a_bad_sweep_spec_is_a_usage_error() -> None:
    run = torchscope("profile", "examples/matmul_add.py::fn", "--sweep", "N=8,zero")
    assert run.returncode == 2
    assert "not a positive integer" in run.stderr
