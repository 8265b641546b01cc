"""``torchscope profile --nproc 2`` for real: torchrun, gloo, two CPU ranks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import REPO
from tests.unit.test_ranks import CONTRACT  # the rank row's JSON contract, one home

ENV = {**os.environ, "PYTHONPATH": str(REPO / "server")}


def _leftovers() -> set[str]:
    """What torchrun or a backend could leave behind: store/log folders and shared memory."""
    tmp = {p.name for p in Path(tempfile.gettempdir()).iterdir()}
    shm = (
        {f"shm:{p.name}" for p in Path("/dev/shm").iterdir()}
        if Path("/dev/shm").is_dir()
        else set()
    )
    return {n for n in tmp if n.startswith(("torchelastic_", "torchscope-ranks-"))} | shm


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def _profile(trace_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", "profile", *args, "--trace-dir", str(trace_dir)],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=400,
    )


def test_two_gloo_ranks_name_the_straggler(trace_dir: Path) -> None:
    before = _leftovers()
    run = _profile(trace_dir, "examples/ranks.py::step", "--json", "--steps", "3", "--warmup", "1")
    assert run.returncode == 0, run.stderr
    assert "USDT:" not in run.stderr, run.stderr  # the ranks' profiler chatter: the log only
    data = json.loads(run.stdout)
    ranks = data["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1] and all(set(r) == CONTRACT for r in ranks)
    for row in ranks:
        assert row["comm_us"] > 0, row  # gloo's all_reduce on both ranks
        assert Path(row["trace_path"]).is_file()
        assert Path(row["trace_path"]).parent.parent == trace_dir
    straggler = [f for f in data["findings"] if f["rule"] == "straggler"]
    assert [f["rank"] for f in straggler] == [1], data["findings"]
    assert data["rank"] == 1 and "rank 1" in data["verdict"]["headline"]
    assert all("rank" in f for f in data["findings"])
    # rank 0 waits inside the all_reduce for rank 1's extra work
    assert ranks[0]["wait_us"] > ranks[1]["wait_us"]
    assert _leftovers() <= before
    # Multi-node, as documented: gather every node's rank traces into one folder, analyse it.
    gathered = trace_dir / "gathered"
    gathered.mkdir()
    for row in ranks:
        shutil.copy(row["trace_path"], gathered / Path(row["trace_path"]).name)
    folder = subprocess.run(
        [sys.executable, "-m", "torchscope", "analyze", "--json", str(gathered)],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    again = json.loads(folder.stdout)
    assert [(r["rank"], r["comm_us"], r["wait_us"]) for r in again["ranks"]] == [
        (r["rank"], r["comm_us"], r["wait_us"]) for r in ranks
    ]
    assert again["rank"] == 1


def test_an_exception_on_rank_0_stops_every_rank(trace_dir: Path) -> None:
    before = _leftovers()
    run = _profile(trace_dir, "examples/ranks.py::broken_on_rank_0", "--steps", "2")
    assert run.returncode == 1
    assert "rank 0 of 2" in run.stderr and "ValueError: rank 0 has no data" in run.stderr
    assert 'examples/ranks.py", line 25, in broken_on_rank_0' in run.stderr
    assert _processes_mentioning(str(trace_dir)) == []  # launcher and ranks all gone
    assert _leftovers() <= before


HANGS = """
import time

import torch
import torch.distributed as dist


# torchscope[nproc=2]: wait_forever(torch.ones(10))
def wait_forever(x):
    if dist.get_rank() == 1:
        time.sleep(600)  # rank 0 waits in the all_reduce below until the timeout
    dist.all_reduce(x)
"""


def test_a_timeout_stops_every_rank(trace_dir: Path, tmp_path: Path) -> None:
    before = _leftovers()
    script = tmp_path / "hangs.py"
    script.write_text(HANGS, encoding="utf-8")
    run = _profile(trace_dir, f"{script}::wait_forever", "--timeout", "12")
    assert run.returncode == 1
    assert "did not finish in 12 s: all were stopped" in run.stderr
    assert _processes_mentioning(str(trace_dir)) == []
    assert _leftovers() <= before


PREFETCH = """
import atexit
import pathlib
import threading

import torch
import torch.distributed as dist


def _prefetch():
    a = torch.randn(256, 256)
    while True:  # a background thread still inside a torch op when the rank ends
        a = torch.tanh(a @ a)


# torchscope[nproc=2]: step(torch.ones(1000))
def step(grad):
    if not any(t.name == "prefetch" for t in threading.enumerate()):
        threading.Thread(target=_prefetch, name="prefetch", daemon=True).start()
        marker = pathlib.Path(__file__).with_name(f"atexit{dist.get_rank()}")
        atexit.register(marker.write_text, "ran")
    dist.all_reduce(grad)
    return grad
"""


def test_ranks_end_cleanly_while_native_threads_still_run(
    trace_dir: Path, tmp_path: Path
) -> None:
    """A rank ends without the interpreter's teardown (and after its atexit hooks): a thread
    that takes the GIL while the interpreter finalises is ended by ``pthread_exit``, and the
    unwinding through a ``noexcept`` torch frame aborts the rank (SIGABRT, 'terminate called
    without an active exception'). gloo's own worker threads lose that race now and then when a
    core is held; a user's background thread inside an op loses it every time."""
    script = tmp_path / "prefetch.py"
    script.write_text(PREFETCH, encoding="utf-8")
    run = _profile(trace_dir, f"{script}::step", "--json", "--steps", "2", "--warmup", "1")
    assert run.returncode == 0, run.stderr
    assert "terminate called" not in run.stderr
    assert [r["rank"] for r in json.loads(run.stdout)["ranks"]] == [0, 1]
    assert sorted(p.name for p in tmp_path.glob("atexit*")) == ["atexit0", "atexit1"]
    assert _processes_mentioning(str(trace_dir)) == []
