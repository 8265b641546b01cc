"""The cross-rank view on a real Dask cluster (``analysis/multi/rank_cluster.py``,
``torchscope analyze DIR --scheduler``): a ``distributed.LocalCluster`` of two worker processes
that the tests start in a child process (so the test process is the client alone, and its
memory is the client's), stopped when the module's tests end."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, wait

from torchscope.analysis import TraceError
from torchscope.analysis.multi.rank_cluster import (
    FAN_IN,
    analyze_ranks_on,
    reduce_on_cluster,
    submit_ranks,
)
from torchscope.analysis.multi.rank_model import RankDigest
from torchscope.analysis.multi.rank_rules import RANK_RULES
from torchscope.analysis.multi.rank_stats import measure_rank_file
from torchscope.analysis.multi.ranks import RanksReport, analyze_folder, analyze_ranks
from torchscope.protocol import to_builtins
from torchscope.report import render_report
from torchscope.report.ranks import render_ranks

from .conftest import KinetoBuilder

REPO = Path(__file__).resolve().parents[2]
PAIRS = {
    "dlrm": ("param_dlrm_ddp_v100_rank0.json.gz", "param_dlrm_ddp_v100_rank1.json.gz"),
    "hta": ("hta_ddp_nccl_a100_rank0.json.gz", "hta_ddp_v100_rank1.json.gz"),
}
INSTALL = 'pip install "torchscope[cluster]"'

# The cluster's process: writes the scheduler file, serves until its stdin closes.
_CLUSTER = """
import json, os, sys
from distributed import LocalCluster
if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        with open(sys.argv[1] + ".tmp", "w") as f:
            json.dump({"address": cluster.scheduler_address}, f)
        os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        sys.stdin.read()
"""


@pytest.fixture(scope="module")
def scheduler_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("cluster") / "scheduler.json"
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLUSTER, str(path)],
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the workers' shutdown chatter
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 120
        while not path.exists():
            assert proc.poll() is None, "the LocalCluster process exited"
            assert time.monotonic() < deadline, "the LocalCluster did not start in 120 s"
            time.sleep(0.2)
        yield path
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def client(scheduler_file: Path) -> Iterator[Client]:
    address = json.loads(scheduler_file.read_text(encoding="utf-8"))["address"]
    with Client(address) as c:
        c.wait_for_workers(2, timeout=120)
        yield c


def _same(local: RanksReport, remote: RanksReport) -> None:
    assert json.dumps(to_builtins(remote.shown)) == json.dumps(to_builtins(local.shown))
    assert render_ranks(remote) == render_ranks(local)
    slow = local.slowest
    assert render_report(remote.reports[slow]) == render_report(local.reports[slow])


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_vendored_ranks_match_the_local_pool(
    pair: str, tmp_path: Path, shared_traces: Path, client: Client
) -> None:
    for name in PAIRS[pair]:
        shutil.copy(shared_traces / name, tmp_path / name)
    local = analyze_folder(tmp_path)
    remote = analyze_ranks_on(client, sorted(tmp_path.iterdir()))
    _same(local, remote)
    assert set(remote.reports) <= set(local.reports)  # only the shown ones came back


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", "analyze", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_the_cli_on_the_cluster_prints_what_the_local_pool_prints(
    tmp_path: Path, shared_traces: Path, scheduler_file: Path
) -> None:
    for name in PAIRS["dlrm"]:
        shutil.copy(shared_traces / name, tmp_path / name)
    address = json.loads(scheduler_file.read_text(encoding="utf-8"))["address"]
    local_json, local_text = _cli("--json", str(tmp_path)), _cli(str(tmp_path))
    assert local_json.returncode == 0 and local_text.returncode == 0, local_json.stderr
    on_file = _cli("--json", "--scheduler-file", str(scheduler_file), str(tmp_path))
    assert on_file.returncode == 0, on_file.stderr
    assert on_file.stdout == local_json.stdout
    by_env = _cli(str(tmp_path), env={"DASK_SCHEDULER_ADDRESS": address})
    assert by_env.returncode == 0, by_env.stderr
    assert by_env.stdout == local_text.stdout


def test_a_broken_rank_trace_is_named_as_given(
    tmp_path: Path, shared_traces: Path, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(shared_traces / PAIRS["dlrm"][0], tmp_path / "rank0.json.gz")
    (tmp_path / "rank1.json").write_text('{"traceEvents": [', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TraceError, match=r"^rank1\.json: .*truncated"):
        analyze_ranks_on(client, ["rank0.json.gz", "rank1.json"])


# -- 256 ranks: the client holds summaries, not traces ------------------------------------------

RANKS = 256
STEPS = 4
COLLECTIVES = 64  # per step, with sequence numbers
#: What Dask's client keeps and sends per task (a Future, its key and state, the pickled task
#: spec in flight): about 2.5 KiB measured on distributed 2026.8; a rank has two tasks (its
#: measure and its digest) and a 1/FAN_IN share of the tree's.
TASK_BYTES = 4096
#: The reduce's own fixed cost: the rules over the rows, Dask's comm buffers.
BASE_BYTES = 1 << 20


def _synthetic_rank(folder: Path, rank: int) -> Path:
    b = KinetoBuilder()
    b.meta["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": RANKS}
    extra = 2000.0 if rank == 7 else 0.0  # rank 7 is the straggler
    seq = 0
    for step in range(STEPS):
        t0 = step * 12000.0
        b.step(step + 1, t0, 11000.0)
        b.kernel("volta_sgemm_128x64_nn", t0 + 10, 2000.0 + extra + rank % 5, corr=1 + step)
        for i in range(COLLECTIVES):
            ts = t0 + 4500 + i * 6000.0 / COLLECTIVES
            b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", ts, 40.0 + rank % 3, corr=100 + seq)
            event = next(e for e in reversed(b.events) if e["ph"] == "X" and e["cat"] == "kernel")
            event["args"].update({"Seq": seq, "Process Group Name": "0"})
            seq += 1
    return b.write(folder / f"rank{rank}.json")


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of ``obj`` and everything it refers to (dataclasses, containers, scalars)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        parts: list[Any] = [getattr(obj, f.name) for f in fields(obj)]
    elif isinstance(obj, dict):
        parts = [*obj.keys(), *obj.values()]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        parts = list(obj)
    else:
        parts = []
    return size + sum(deep_size(p, seen) for p in parts)


def test_256_ranks_keep_the_client_small_and_match_the_local_pool(
    tmp_path: Path, client: Client
) -> None:
    paths = [_synthetic_rank(tmp_path, r) for r in range(RANKS)]
    local = analyze_ranks(paths)
    stats = submit_ranks(client, paths)
    wait(stats)
    tracemalloc.start()
    try:
        remote = reduce_on_cluster(client, stats)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        client.cancel(stats)
    _same(local, remote)
    assert (remote.alignment, remote.aligned) == ("sequence", STEPS * COLLECTIVES)
    # The client got one digest per rank and the reports it shows: the slowest rank's and
    # those the cross-rank findings name, at most one per rule.
    assert len(remote.reports) <= 1 + len(RANK_RULES)
    digest = deep_size(RankDigest(remote.ranks[0], True))
    reports = deep_size(remote.reports)
    tasks_per_rank = 2 + 1 / FAN_IN + 1 / FAN_IN**2
    bound = RANKS * (digest + tasks_per_rank * TASK_BYTES) + reports + BASE_BYTES
    assert peak <= bound, f"client peak {peak} B > {bound} B"
    # What the local pool's parent holds per rank (its whole RankStats) would not fit: the
    # bound above tells summaries from traces.
    one_rank = deep_size(measure_rank_file(str(paths[0]), 0))
    assert 2 * bound < RANKS * one_rank, (bound, one_rank)


# -- selecting the cluster: the failures --------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_an_unreachable_scheduler_is_one_message(tmp_path: Path, shared_traces: Path) -> None:
    shutil.copy(shared_traces / PAIRS["dlrm"][0], tmp_path / "rank0.json.gz")
    address = f"tcp://127.0.0.1:{_free_port()}"
    done = _cli(
        "--scheduler",
        address,
        str(tmp_path),
        env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},  # Dask's own setting
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(f"torchscope: cannot reach the Dask scheduler at {address}")
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


# Dask cannot be imported: ``None`` in ``sys.modules`` makes ``import distributed`` fail.
_NO_DASK = """
import sys
sys.modules["distributed"] = None
from torchscope.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_named_scheduler_without_dask_says_what_to_install(
    tmp_path: Path, shared_traces: Path
) -> None:
    shutil.copy(shared_traces / PAIRS["dlrm"][0], tmp_path / "rank0.json.gz")
    done = subprocess.run(
        [sys.executable, "-c", _NO_DASK, "analyze", "--scheduler", "tcp://127.0.0.1:8786", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert INSTALL in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
