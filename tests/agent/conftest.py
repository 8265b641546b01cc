"""Jobs with an agent, as real processes: ``train_loop.py`` started under
``python -m torchscope.agent`` with a private ``XDG_RUNTIME_DIR`` (short: a socket path has
at most 107 bytes), and the CLI run as ``python -m torchscope``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

HERE = Path(__file__).resolve().parent
LOOP = HERE / "train_loop.py"


@dataclass
class Job:
    process: subprocess.Popen[str]
    pid: int
    runtime: Path
    lines: list[str] = field(default_factory=list)  # read so far (``wait_for``)

    @property
    def socket(self) -> Path:
        return self.runtime / "torchscope" / f"agent-{self.pid}.sock"

    def wait_for(self, prefix: str) -> list[str]:
        """The job's output lines up to the first that starts with ``prefix`` (included)."""
        assert self.process.stdout is not None
        start = len(self.lines)
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith(prefix):
                return self.lines[start:]
        raise AssertionError(f"the job ended before printing {prefix!r}: {self.lines[-5:]}")

    def release(self, step: int) -> None:
        (self.runtime / f"release-{step}").touch()

    def losses(self) -> list[str]:
        """The rest of the job's output, once it ended: its losses (``float.hex``)."""
        assert self.process.stdout is not None
        out = self.process.stdout.read()  # not communicate(): it skips what readline buffered
        self.process.wait(120)
        self.lines += out.splitlines(keepends=True)
        return [line.split()[1] for line in self.lines if line.startswith("loss ")]


_STARTED: list[subprocess.Popen[str]] = []


def started(process: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """``process`` (started in its own session), killed with its children after the test if
    it is still running: a failed test leaves no job behind."""
    _STARTED.append(process)
    return process


@pytest.fixture(autouse=True)
def _reap() -> Iterator[None]:
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


@pytest.fixture
def runtime() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ts"))
    folder.chmod(0o700)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def agent_env(runtime: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this checkout's torchscope
    return env


def start_job(
    runtime: Path,
    steps: int,
    pause: float,
    agent: bool = True,
    script: Optional[Path] = None,
    hold_at: tuple[int, ...] = (),
    **env: str,
) -> Job:
    """``train_loop.py`` (or ``script``) under the agent; returns once it printed ``ready``.
    ``hold_at``: steps it waits before until ``Job.release``."""
    head = [sys.executable, "-m", "torchscope.agent"] if agent else [sys.executable]
    process = started(
        subprocess.Popen(
            [*head, str(script or LOOP)],
            env=agent_env(
                runtime,
                STEPS=str(steps),
                PAUSE=str(pause),
                HOLD_AT=",".join(map(str, hold_at)),
                HOLD_DIR=str(runtime),
                **env,
            ),
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("ready"), line
    return Job(process, int(line.split()[1]), runtime)


def attach_in_background(runtime: Path, *args: str) -> subprocess.Popen[str]:
    """``torchscope attach ARGS…`` started, its output piped."""
    return started(
        subprocess.Popen(
            [sys.executable, "-m", "torchscope", "attach", *args],
            env=agent_env(runtime),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    )


def wait_patched(runtime: Path, pid: int, qualname: str, timeout: float = 120) -> None:
    """Until the agent in ``pid`` has ``qualname`` wrapped (an attach is waiting for calls)."""
    import asyncio
    import time

    from torchscope.host.attach_run import hello

    deadline = time.monotonic() + timeout
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        while qualname not in asyncio.run(hello(pid)).patched:
            assert time.monotonic() < deadline, f"{qualname} never wrapped in {pid}"
            time.sleep(0.05)
    finally:
        del os.environ["XDG_RUNTIME_DIR"]


def torchscope(runtime: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        env=agent_env(runtime),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
