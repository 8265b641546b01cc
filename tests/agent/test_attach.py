"""``torchscope attach`` on a real training job (``train_loop.py``: an ``nn.Module``, AdamW,
200 seeded CPU steps) started under ``python -m torchscope.agent``: the job's losses stay
bit-identical to an unattached run's while its ``forward`` and its ``step`` are profiled, and
whatever goes wrong (the client killed, the job exiting, a target never called) leaves the job
running with nothing of the agent's behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.agent.conftest import (
    LOOP,
    agent_env,
    attach_in_background,
    start_job,
    started,
    torchscope,
    wait_patched,
)
from torchscope.host.attach_run import hello
from torchscope.protocol import AgentInfo


def _info(runtime: Path, pid: int) -> AgentInfo:
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        return asyncio.run(hello(pid))
    finally:
        del os.environ["XDG_RUNTIME_DIR"]


def test_attach_twice_losses_bit_identical(runtime: Path) -> None:
    job = start_job(runtime, steps=200, pause=0, hold_at=(50, 150))
    done = {}
    for hold, qualname in ((50, "Net.forward"), (150, "step")):
        job.wait_for(f"hold {hold}")
        client = attach_in_background(
            runtime, str(job.pid), "--target", f"{LOOP}::{qualname}", "--calls", "3", "--json"
        )
        wait_patched(runtime, job.pid, qualname)
        job.release(hold)
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        done[qualname] = json.loads(out)
    attached = job.losses()
    assert job.process.returncode == 0
    plain = start_job(runtime, steps=200, pause=0, agent=False).losses()
    assert len(attached) == 200 and attached == plain  # bit for bit (float.hex)
    for qualname, data in done.items():
        assert data["source"] == "attached" and data["pid"] == job.pid
        assert data["target"]["qualname"] == qualname
        assert data["inputs"]["source"] == "attached"
        assert len(data["attached"]["calls"]) == 3 and len(data["attached"]["profiled"]) == 3
        assert len(data["steps"]) == 3 and data["step_source"] == "ProfilerStep"  # one a call
        assert data["verdict"]["id"]
        assert data["lines"], "the marked copy gave per-line times"
    forward_calls = done["Net.forward"]["attached"]["profiled"]
    assert all(c["training"] is True and c["grad_enabled"] for c in forward_calls)
    assert not job.socket.exists(), "the socket file is removed when the job exits"


def test_client_killed_mid_profile_restores(runtime: Path) -> None:
    job = start_job(runtime, steps=100_000, pause=0.01)
    client = started(subprocess.Popen(
        [sys.executable, "-m", "torchscope", "attach", str(job.pid), "--target",
         f"{LOOP}::step", "--calls", "100"],
        env=agent_env(runtime), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        start_new_session=True,
    ))  # fmt: skip
    assert client.stderr is not None
    for line in client.stderr:
        if "timing:" in line:
            break
    during = _info(runtime, job.pid)
    assert during.patched == ["step"]
    client.send_signal(signal.SIGKILL)
    client.wait()
    deadline = time.monotonic() + 10
    while True:
        after = _info(runtime, job.pid)
        if not after.patched and after.agent_threads == 2:
            break  # the listener and this hello's connection: the killed one's thread ended
        assert time.monotonic() < deadline, after
        time.sleep(0.1)
    assert job.wait_for("loss"), "the job goes on"


def test_job_exits_mid_profile(runtime: Path) -> None:
    job = start_job(runtime, steps=30, pause=0, hold_at=(10,))
    job.wait_for("hold 10")
    client = attach_in_background(
        runtime, str(job.pid), "--target", f"{LOOP}::step", "--calls", "500"
    )
    wait_patched(runtime, job.pid, "step")
    job.release(10)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 1
    assert "job exited" in err and "Traceback" not in err
    assert len(job.losses()) == 30 and job.process.returncode == 0
    assert not job.socket.exists()


def test_target_never_called_times_out_and_job_goes_on(runtime: Path) -> None:
    job = start_job(runtime, steps=300, pause=0.01, hold_at=(100,))
    done = torchscope(runtime, "attach", str(job.pid), "--target", f"{LOOP}::Net.__init__",
                      "--timeout", "1")  # fmt: skip
    assert done.returncode == 1
    assert "called 0 of 10 times within 1 s" in done.stderr, done.stderr
    assert not _info(runtime, job.pid).patched
    missing = torchscope(runtime, "attach", str(job.pid), "--target", f"{LOOP}::nothing")
    assert missing.returncode == 2 and "nothing" in missing.stderr
    assert len(job.wait_for("hold 100")) >= 1
    job.release(100)
    assert len(job.losses()) == 300 and job.process.returncode == 0


def test_jobs_and_steps(runtime: Path) -> None:
    job = start_job(runtime, steps=300, pause=0.01, hold_at=(0, 100))
    listed = torchscope(runtime, "jobs", "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["pid"] for r in rows] == [job.pid]
    assert "tests/agent/train_loop.py::step" in rows[0]["functions"]
    table = torchscope(runtime, "jobs").stdout.splitlines()
    assert table[0].split() == ["PID", "RANK", "AGE", "COMMAND"]
    assert table[1].split()[:2] == [str(job.pid), "-"] and "train_loop.py" in table[1]
    for hold, shown in ((0, "--json"), (100, "-q")):
        job.wait_for(f"hold {hold}")
        client = attach_in_background(runtime, str(job.pid), "--steps", "3", shown)
        wait_patched(runtime, job.pid, "the next 3 optimizer steps")
        job.release(hold)
        out, err = client.communicate(timeout=120)
        assert client.returncode == 0, err
        if shown == "--json":
            data = json.loads(out)
            assert data["source"] == "attached" and data["step_source"] == "ProfilerStep"
            assert len(data["steps"]) == 3  # one per profiled optimizer step
        else:
            assert (
                "steps (3, from ProfilerStep)" in out and f"attached: pid {job.pid}, 3 steps" in out
            )
    assert len(job.losses()) == 300
    none = torchscope(runtime, "attach", str(job.pid), "--target", f"{LOOP}::step")
    assert none.returncode == 1 and "no torchscope agent listens" in none.stderr


def test_ctrl_c_cancels_and_restores(runtime: Path) -> None:
    job = start_job(runtime, steps=100_000, pause=0.01)
    client = attach_in_background(
        runtime, str(job.pid), "--target", f"{LOOP}::step", "--calls", "100000"
    )
    wait_patched(runtime, job.pid, "step")
    client.send_signal(signal.SIGINT)  # what Ctrl-C sends
    _, err = client.communicate(timeout=60)
    assert client.returncode == 130 and "Traceback" not in err, err
    assert not _info(runtime, job.pid).patched
    assert job.wait_for("loss"), "the job goes on"


def test_the_job_s_own_exception_is_the_job_s(runtime: Path) -> None:
    """A call that raises while attached: the job gets its exception as it would have (and
    skips the step), the client is told, the function is restored; the losses are unchanged."""
    job = start_job(runtime, steps=120, pause=0, hold_at=(50,), RAISE_AT="52")
    job.wait_for("hold 50")
    client = attach_in_background(
        runtime, str(job.pid), "--target", f"{LOOP}::step", "--calls", "5"
    )
    wait_patched(runtime, job.pid, "step")
    job.release(50)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 1 and "raised ValueError('a bad batch')" in err, err
    attached = job.losses()
    plain = start_job(runtime, steps=120, pause=0, agent=False, RAISE_AT="52").losses()
    assert len(attached) == 119 and attached == plain
    assert any(line.startswith("skipped a bad batch") for line in job.lines)
