"""``torchscope attach --all-ranks`` on two gloo ranks under torchrun, each started with the
agent (``torchrun -m torchscope.agent``): the same function profiled on both at once, the ranks
table and the cross-rank view; both ranks go on."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.agent.conftest import agent_env, started, torchscope

LOOP = Path(__file__).resolve().parent / "ranks_loop.py"


def test_all_ranks(runtime: Path) -> None:
    job = started(subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--standalone", "-m", "torchscope.agent", str(LOOP)],
        env=agent_env(runtime, STEPS="3000"), stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    ))  # fmt: skip
    try:
        _attach_every_rank(runtime, job, _ready(job))
    finally:  # torchrun's workers are in sessions of their own: end each (its agent's socket)
        for sock in (runtime / "torchscope").glob("agent-*.sock"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(sock.stem.split("-")[1]), signal.SIGKILL)


def _ready(job: subprocess.Popen[str]) -> dict[int, int]:
    """rank → pid, from the ranks' ``ready RANK PID`` lines (among whatever else comes)."""
    assert job.stdout is not None
    pids: dict[int, int] = {}
    seen: list[str] = []
    while len(pids) < 2 and len(seen) < 50:
        seen.append(job.stdout.readline())
        if not seen[-1]:
            break
        words = seen[-1].split()
        if words[:1] == ["ready"]:
            pids[int(words[1])] = int(words[2])
    assert sorted(pids) == [0, 1], seen
    return pids


def _attach_every_rank(runtime: Path, job: subprocess.Popen[str], pids: dict[int, int]) -> None:
    assert sorted(pids) == [0, 1], pids
    listed = [
        json.loads(line) for line in torchscope(runtime, "jobs", "--json").stdout.splitlines()
    ]
    assert sorted((j["rank"], j["world_size"]) for j in listed) == [(0, 2), (1, 2)]
    done = torchscope(runtime, "attach", "--all-ranks", str(pids[1]), "--target",
                      f"{LOOP}::step", "--calls", "3", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["source"] == "attached" and sorted(data["pids"]) == sorted(pids.values())
    assert [r["rank"] for r in data["ranks"]] == [0, 1]
    text = torchscope(runtime, "attach", "--all-ranks", str(pids[0]), "--target",
                      f"{LOOP}::step", "--calls", "2")  # fmt: skip
    assert text.returncode == 0 and "rank 1, pid" in text.stdout, text.stderr
    assert job.poll() is None, "both ranks go on"
