"""Failures through the CLI: one message on stderr naming the problem and the fix, exit code 1,
and nothing left running — even when the CLI itself is killed mid-job."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.reliability.conftest import (
    ENV,
    TORCHSCOPE,
    marked_processes,
    profile_cli,
    wait_no_leftovers,
)

TWO_CALLS = """\
import os
import torch


# torchscope: crash_or_not("abort")
# torchscope: crash_or_not("")
def crash_or_not(how):
    if how == "abort":
        os.abort()
    return torch.ones(8, 8) @ torch.ones(8, 8)
"""


def test_function_not_found(cases: Path) -> None:
    run = profile_cli(f"{cases}::no_such_function")
    assert run.returncode == 2
    assert "no function 'no_such_function' — functions here: good" in run.stderr, run.stderr
    assert profile_cli(f"{cases}::good").returncode == 0


def test_abort_is_named_and_the_next_call_works_in_a_fresh_worker(tmp_path: Path) -> None:
    path = tmp_path / "two.py"
    path.write_text(TWO_CALLS)
    run = profile_cli(f"{path}::crash_or_not")
    assert run.returncode == 1, run.stderr
    assert "the worker crashed: SIGABRT (abort)" in run.stderr, run.stderr
    assert "Fatal Python error: Aborted" in run.stderr  # the worker's last words, quoted
    assert "== crash_or_not" in run.stdout and "verdict:" in run.stdout  # the second call


def test_cuda_without_cuda_is_an_error(cases: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    run = profile_cli(f"{cases}::good", "--device", "cuda")
    assert run.returncode == 1
    assert "sees no CUDA device" in run.stderr and "--device cpu" in run.stderr, run.stderr


def test_output_is_printed_once_and_capped(cases: Path) -> None:
    command = [*TORCHSCOPE, "profile", f"{cases}::prints_20mb", "--steps", "2", "--warmup", "1"]
    run = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.count("x") < 300 * 1024, run.stderr.count("x")  # 256 KiB, once
    assert re.search(r"\d+\.\d [MG]B more output not shown", run.stderr), run.stderr[-500:]


def test_children_after_success_exit_fast_and_cleanly(cases: Path) -> None:
    run = profile_cli(f"{cases}::starts_children")
    assert run.returncode == 0, run.stderr
    assert "Event loop is closed" not in run.stderr
    assert run.seconds < 60


def _venv(folder: Path, link_from: Path | None = None, skip: tuple[str, ...] = ()) -> str:
    """A venv with no packages; with ``link_from``, that site-packages minus ``skip``."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120
    )
    python = folder / "bin" / "python"
    if link_from is not None:
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        shelf = folder / "shelf"
        shelf.mkdir()
        for entry in link_from.iterdir():
            if not entry.name.lower().startswith(skip) and not entry.name.endswith(".pth"):
                (shelf / entry.name).symlink_to(entry)
        (Path(site) / "shelf.pth").write_text(str(shelf) + "\n")
    return str(python)


def test_interpreter_without_torch_or_msgpack_gets_the_install_hint(
    cases: Path, tmp_path: Path
) -> None:
    python = _venv(tmp_path / "bare")
    run = profile_cli(f"{cases}::good", python=python)
    assert run.returncode == 1
    assert "torch cannot be imported" in run.stderr, run.stderr
    assert f"{python} -m pip install torch" in run.stderr
    assert "ModuleNotFoundError: No module named 'msgpack'" not in run.stderr


def test_interpreter_with_torch_but_no_msgpack_works(cases: Path, tmp_path: Path) -> None:
    import torch

    site = Path(torch.__file__).resolve().parents[1]
    python = _venv(tmp_path / "nomsgpack", link_from=site, skip=("msgpack", "torchscope"))
    check = subprocess.run([python, "-c", "import msgpack"], capture_output=True)
    assert check.returncode != 0  # really without msgpack
    run = profile_cli(f"{cases}::good", python=python)
    assert run.returncode == 0, run.stderr
    assert "verdict:" in run.stdout


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_cli_killed_mid_job_leaves_nothing(cases: Path, sig: signal.Signals) -> None:
    command = [*TORCHSCOPE, "profile", f"{cases}::child_then_spin", "-q", "--timeout", "300"]
    cli = subprocess.Popen(
        command,
        env=ENV,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # The CLI as a terminal starts it: a suite run under `nohup` would pass SIGHUP on
        # ignored (ignored signals survive exec), and the CLI would rightly keep running.
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    try:
        _wait_for_escaper()
        cli.send_signal(sig)
        cli.wait(30)
    finally:
        if cli.poll() is None:
            cli.kill()
    left = wait_no_leftovers(5.0, keep_servers=False)
    assert left == [], left


def _wait_for_escaper(timeout_s: float = 120) -> None:
    """Until the job is running: its setsid'd, SIGTERM-ignoring child exists."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any("os.setsid()" in cmd for _, cmd in marked_processes(False)):
            time.sleep(0.3)
            return
        time.sleep(0.1)
    raise AssertionError(f"the job never started: {marked_processes(False)}")


def test_server_killed_mid_job_leaves_nothing(cases: Path) -> None:
    from tests.reliability.raw_lsp import RawServer

    with RawServer([*TORCHSCOPE, "serve"], ENV, REPO) as server:
        server.profile(cases, "child_then_spin")
        _wait_for_escaper()
        os.kill(server.pid, signal.SIGKILL)
    left = wait_no_leftovers(5.0, keep_servers=False)
    assert left == [], left


def test_server_shut_down_mid_job_leaves_nothing(cases: Path) -> None:
    from tests.reliability.raw_lsp import RawServer

    with RawServer([*TORCHSCOPE, "serve"], ENV, REPO) as server:
        server.profile(cases, "child_then_spin")
        _wait_for_escaper()
        server.shutdown()
    left = wait_no_leftovers(5.0, keep_servers=False)
    assert left == [], left


RANKS_CASE = """\
import subprocess
import sys
import time

import torch.distributed as dist


def escaping_ranks():
    if dist.get_rank() == 1:  # one rank starts a setsid'd child that ignores SIGTERM
        code = "import os, signal, time; os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
        subprocess.Popen([sys.executable, "-c", code])
    while True:
        time.sleep(0.05)
"""


def test_cli_killed_mid_multi_process_job_leaves_nothing(tmp_path: Path) -> None:
    """`profile --nproc 2` runs torchrun outside the worker: the same guardian covers it, so
    killing the CLI with SIGKILL still ends torchrun, both ranks and a rank's escaped child."""
    case = tmp_path / "ranks_case.py"
    case.write_text(RANKS_CASE)
    command = [*TORCHSCOPE, "profile", f"{case}::escaping_ranks", "--nproc", "2", "-q"]
    cli = subprocess.Popen(
        [*command, "--timeout", "300"],
        env=ENV,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not any("os.setsid()" in cmd for _, cmd in marked_processes(False)):
            assert time.monotonic() < deadline, marked_processes(False)
            time.sleep(0.2)
        time.sleep(0.5)
        cli.send_signal(signal.SIGKILL)
        cli.wait(30)
    finally:
        if cli.poll() is None:
            cli.kill()
    left = wait_no_leftovers(10.0, keep_servers=False)
    assert left == [], left


def test_multi_process_run_over_max_memory_is_stopped_and_named(cases: Path) -> None:
    """`--max-memory` bounds a `--nproc` run too: torchrun and both ranks together. Each rank
    hoards 16 MB tensors; the run is stopped at the limit, named, and nothing is left."""
    run = profile_cli(f"{cases}::eats_memory", "--nproc", "2", "--max-memory", "2G")
    assert run.returncode == 1, run
    assert "stopped at" in run.stderr and "(limit 2.0 GB)" in run.stderr, run.stderr
    assert "--max-memory" in run.stderr, run.stderr
    assert run.seconds < 120, run  # stopped at the limit, not at the timeout
    left = wait_no_leftovers(10.0, keep_servers=False)
    assert left == [], left
