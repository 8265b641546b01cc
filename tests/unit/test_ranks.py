"""The cross-rank view (``analysis/ranks.py``) on real per-rank traces, and the cross-rank
rules' thresholds."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import TraceError
from torchscope.analysis.engine import ALL_RULES
from torchscope.analysis.multi.rank_model import RankContext, RankSummary
from torchscope.analysis.multi.rank_rules import RANK_RULES, run_rank_rules
from torchscope.analysis.multi.ranks import analyze_folder, rank_paths

from .conftest import KinetoBuilder

REPO = Path(__file__).resolve().parents[2]
CONTRACT = {
    "rank",
    "wall_us",
    "compute_us",
    "comm_us",
    "wait_us",
    "exposed_comm_us",
    "trace_path",
    "hidden_comm_us",
    "hidden_share",
    "hidden_share_min",
    "hidden_share_max",
}


@pytest.fixture
def dlrm_pair(tmp_path: Path, shared_traces: Path) -> Path:
    for rank in (0, 1):
        name = f"param_dlrm_ddp_v100_rank{rank}.json.gz"
        shutil.copy(shared_traces / name, tmp_path / name)
    return tmp_path


def nccl_per_step(path: Path) -> float:
    """NCCL kernel time inside the trace's one ProfilerStep, straight from the JSON."""
    events: list[dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    (step,) = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo, hi = float(step["ts"]), float(step["ts"]) + float(step["dur"])
    kernels = [
        e
        for e in events
        if e.get("cat") == "kernel" and "nccl" in e["name"].lower() and lo <= e["ts"] < hi
    ]
    assert kernels
    return sum(float(e["dur"]) for e in kernels)


def test_dlrm_pair_comm_matches_the_nccl_kernels(dlrm_pair: Path) -> None:
    view = analyze_folder(dlrm_pair)
    assert [r.rank for r in view.ranks] == [0, 1]  # from the traces' distributedInfo
    for row in view.ranks:
        expected = nccl_per_step(Path(row.trace_path))
        assert row.comm_us == pytest.approx(expected, abs=0.5)
        assert 0 <= row.wait_us <= row.comm_us
        assert 0 <= row.exposed_comm_us <= row.comm_us
        assert 0 < row.compute_us < row.wall_us
    # no sequence numbers in these 2023 traces: the n-th collective of each name, 8 on each
    assert (view.alignment, view.aligned) == ("order", 8)


def test_analyze_folder_json_has_the_contract(dlrm_pair: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "torchscope", "analyze", "--json", str(dlrm_pair)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    assert [set(r) for r in data["ranks"]] == [CONTRACT, CONTRACT]
    slowest = data["rank"]
    assert f"rank {slowest}" in data["verdict"]["headline"]
    assert all("rank" in f for f in data["findings"])
    cross = [f for f in data["findings"] if f["rule"] in {r.id for r in RANK_RULES}]
    assert {f["rule"] for f in cross} >= {"comm-heavy"}  # 57 % of rank 1's step is NCCL
    assert data["trace_path"] == str(dlrm_pair)


def test_folder_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="holds no trace files"):
        analyze_folder(tmp_path)
    with pytest.raises(TraceError, match="not a folder"):
        analyze_folder(tmp_path / "missing")


def test_rank_paths_take_folders_globs_and_files(dlrm_pair: Path) -> None:
    first, second = sorted(dlrm_pair.glob("*.json.gz"))
    assert rank_paths([str(dlrm_pair)]) == [first, second]
    assert rank_paths([str(dlrm_pair / "*rank*.json.gz")]) == [first, second]
    assert rank_paths([str(second), str(first), str(dlrm_pair)]) == [second, first]  # once each
    with pytest.raises(TraceError, match="matches no file"):
        rank_paths([str(dlrm_pair / "nothing*.json")])
    with pytest.raises(TraceError, match="no such trace file or folder"):
        rank_paths([str(dlrm_pair / "missing.json")])


def test_analyze_of_several_traces_is_their_folder(dlrm_pair: Path) -> None:
    def run(*args: str) -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, "-m", "torchscope", "analyze", "--json", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        data: dict[str, Any] = json.loads(out)
        return data

    folder = run(str(dlrm_pair))
    files = [str(p) for p in sorted(dlrm_pair.glob("*.json.gz"))]
    several = run(*files)
    assert several.pop("trace_path") == " ".join(files)
    folder.pop("trace_path")
    assert several == folder


def test_a_broken_rank_trace_is_named(tmp_path: Path, shared_traces: Path) -> None:
    shutil.copy(shared_traces / "param_dlrm_ddp_v100_rank0.json.gz", tmp_path / "rank0.json.gz")
    (tmp_path / "rank1.json").write_text('{"traceEvents": [', encoding="utf-8")
    with pytest.raises(TraceError, match=r"rank1\.json: .*truncated"):
        analyze_folder(tmp_path, workers=2)  # raised in a pool process, re-raised here


def test_repeated_ranks_are_numbered_by_file_order(tmp_path: Path, shared_traces: Path) -> None:
    for i in range(2):
        shutil.copy(
            shared_traces / "param_dlrm_ddp_v100_rank0.json.gz", tmp_path / f"copy{i}.json.gz"
        )
    view = analyze_folder(tmp_path, workers=1)
    assert [r.rank for r in view.ranks] == [0, 1]
    assert any("same rank" in n for n in view.notes)


def _row(rank: int, wall: float, compute: float, comm: float, wait: float) -> RankSummary:
    return RankSummary(rank, wall, compute, comm, wait, comm, f"rank{rank}.json")


def test_straggler_is_the_rank_the_others_wait_for() -> None:
    # Rank 1 computes 30 ms more; rank 0 waits those 30 ms inside its all_reduce.
    rows = [_row(0, 100.0e3, 40e3, 50e3, 30e3), _row(1, 100.0e3, 70e3, 20e3, 0.0)]
    findings, skipped = run_rank_rules(RankContext(rows, "order", 3))
    by_rule = {f.rule: f for f in findings}
    assert by_rule["straggler"].details["rank"] == 1
    assert by_rule["straggler"].details["extra_compute_us"] > 0
    assert by_rule["imbalance"].details["rank"] == 1
    assert by_rule["comm-heavy"].details["rank"] == 0
    balanced = [_row(0, 100e3, 60e3, 20e3, 1e3), _row(1, 100e3, 61e3, 20e3, 0.0)]
    findings, skipped = run_rank_rules(RankContext(balanced, "order", 3))
    assert not {"straggler", "imbalance"} & {f.rule for f in findings}
    findings, skipped = run_rank_rules(RankContext(rows[:1], "order", 3))
    assert skipped["straggler"] == "only one rank"


def test_comm_heavy_is_one_id_over_both_scopes() -> None:
    single = next(r for r in ALL_RULES if r.id == "comm-heavy")
    across = next(r for r in RANK_RULES if r.id == "comm-heavy")
    assert single is not across and single.docs_anchor == across.docs_anchor
    docs = (REPO / "docs" / "findings.md").read_text(encoding="utf-8")
    for rule in RANK_RULES:
        assert f"### {rule.id}" in docs, f"docs/findings.md lacks a section for {rule.id}"


def _rank_trace(
    kineto: type[KinetoBuilder], path: Path, rank: int, nccl: list[tuple[int, float, float]]
) -> Path:
    """One step [0, 1000] µs with a 200 µs compute kernel and NCCL kernels ``(seq, ts, dur)``."""
    b = kineto()
    b.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
    b.step(1, 0.0, 1000.0)
    b.kernel("volta_sgemm_128x64_nn", 10.0, 200.0, corr=1)
    for i, (seq, ts, dur) in enumerate(nccl):
        b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", ts, dur, corr=10 + i)
        event = next(e for e in reversed(b.events) if e["ph"] == "X" and e["cat"] == "kernel")
        event["args"].update({"Seq": seq, "Process Group Name": "0"})
    return b.write(path / f"rank{rank}.json")


def test_collectives_align_by_sequence_number(tmp_path: Path, kineto: type[KinetoBuilder]) -> None:
    # Rank 1's profiler missed collective 7: by order its first kernel would pair with rank
    # 0's collective 7; by sequence number it pairs with 8, where rank 0 waited 200 µs.
    _rank_trace(kineto, tmp_path, 0, [(7, 300.0, 100.0), (8, 500.0, 300.0)])
    _rank_trace(kineto, tmp_path, 1, [(8, 700.0, 100.0)])
    view = analyze_folder(tmp_path, workers=1)
    assert (view.alignment, view.aligned) == ("sequence", 1)
    assert [(r.rank, r.comm_us, r.wait_us) for r in view.ranks] == [
        (0, 400.0, 200.0),
        (1, 100.0, 0.0),
    ]
    assert [(r.compute_us, r.exposed_comm_us) for r in view.ranks] == [
        (200.0, 400.0),
        (200.0, 100.0),
    ]


def test_rank_rows_sum_overlap_over_the_same_steps(
    tmp_path: Path, kineto: type[KinetoBuilder]
) -> None:
    # Issue 40: the rows took the median of each column, from different steps. Step 1 hides a
    # 300 µs all-reduce under compute; steps 2 and 3 expose 100 µs each. Per-step medians read
    # "0 µs hidden" next to a 60 % hidden share; the sums over the steps agree.
    for rank in (0, 1):
        b = kineto()
        b.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        for k in range(3):
            t0 = 1000.0 * k
            b.step(k + 1, t0, 1000.0)
            b.kernel("volta_sgemm_128x64_nn", t0 + 10, 390.0, corr=1 + 10 * k, stream=7)
            start, dur = (t0 + 50, 300.0) if k == 0 else (t0 + 500, 100.0)
            b.kernel(
                "ncclKernel_AllReduce_RING_LL_Sum_float", start, dur, corr=2 + 10 * k, stream=8
            )
        b.write(tmp_path / f"rank{rank}.json")
    view = analyze_folder(tmp_path, workers=1)
    for row in view.ranks:
        assert row.comm_us == pytest.approx(500.0 / 3)
        assert row.hidden_comm_us == pytest.approx(100.0)
        assert row.exposed_comm_us == pytest.approx(200.0 / 3)
        assert row.hidden_comm_us + row.exposed_comm_us == pytest.approx(row.comm_us)
        assert row.hidden_share == pytest.approx(row.hidden_comm_us / row.comm_us)
