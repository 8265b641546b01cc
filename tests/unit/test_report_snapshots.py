"""`torchscope analyze --json` on every vendored real trace is byte-identical to its snapshot.

The snapshots in ``tests/data/snapshots/`` were written by the analysis as it stood before the
typed-result refactor (issue "One seam per concept") and before the faster parser: a change that
alters any number, finding or field of a report fails here. To accept an intended change, run
``python tests/unit/test_report_snapshots.py --update`` and review the diff of the JSON files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "tests" / "data" / "traces"
SNAPSHOTS = REPO / "tests" / "data" / "snapshots"
TRACE_FILES = sorted(p.name for p in TRACES.iterdir() if p.name.endswith((".json", ".json.gz")))


def analyze_json(name: str) -> str:
    """What ``torchscope analyze --json`` prints for the vendored trace ``name`` (the trace
    path relative to the repository, so the snapshot does not depend on the checkout)."""
    return subprocess.run(
        [sys.executable, "-m", "torchscope", "analyze", "--json", f"tests/data/traces/{name}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_every_vendored_trace_has_a_snapshot() -> None:
    assert len(TRACE_FILES) == 16
    missing = [n for n in TRACE_FILES if not (SNAPSHOTS / f"{n}.report.json").exists()]
    assert not missing


def test_a_gpu_verdict_names_its_first_cause() -> None:
    """On every vendored GPU trace the verdict's cause is the first of its causes (issue 40),
    and an overhead-bound device names the costliest of what an idle device waits for (issue
    30): the DLRM rank 1 step is idle while the CPU waits in cudaStreamSynchronize, so its
    cause is sync, ahead of the collectives its GPU runs (hidden: the GPU waits on the host)."""
    idle = ("dispatch", "sync", "input")
    for name in TRACE_FILES:
        verdict = json.loads((SNAPSHOTS / f"{name}.report.json").read_text())["verdict"]
        costs = {c["cause"]: c["us_per_call"] for c in verdict["causes"]}
        assert verdict["cause"] == verdict["causes"][0]["cause"], name
        if verdict["id"] == "overhead-bound" and costs:
            assert costs.get(verdict["cause"], 0.0) == max(costs.get(c, 0.0) for c in idle), name
        if verdict["id"] == "compute-bound":
            assert verdict["cause"] == "compute", name
    dlrm = json.loads((SNAPSHOTS / "param_dlrm_ddp_v100_rank1.json.gz.report.json").read_text())
    assert dlrm["verdict"]["cause"] == "sync"
    comm = next(c for c in dlrm["verdict"]["causes"] if c["cause"] == "comm")
    assert comm["hidden"] is True


@pytest.mark.parametrize("name", TRACE_FILES)
def test_analyze_json_is_unchanged(name: str) -> None:
    expected = (SNAPSHOTS / f"{name}.report.json").read_text(encoding="utf-8")
    assert analyze_json(name) == expected


if __name__ == "__main__":  # python tests/unit/test_report_snapshots.py --update
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: test_report_snapshots.py --update")
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    for trace in TRACE_FILES:
        (SNAPSHOTS / f"{trace}.report.json").write_text(analyze_json(trace), encoding="utf-8")
        print("wrote", trace)
