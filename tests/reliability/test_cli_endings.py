"""How the CLI ends when the terminal ends it: Ctrl-C (SIGINT to the whole foreground process
group, as a terminal sends it) prints one line and exits 130; a reader that closes stdout early
(``… | head -c 100``) ends it quietly, as coreutils end. No traceback either way, and nothing
left running."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.reliability.conftest import ENV, TORCHSCOPE, wait_no_leftovers

TRACES = REPO / "tests" / "data" / "traces"
INTERRUPTED = "interrupted — nothing left running"
MAIN = "import cases\ncases.spins()\n"
#: A function ``inference-mode`` applies to, whose call sleeps: the trial's check is still running.
INFER = """\
import time

import torch


# torchscope: infer(torch.nn.Linear(4, 4))
def infer(model):
    time.sleep(600)
    return model(torch.ones(4))
"""


def _group(pgid: int) -> list[str]:
    """The live processes of process group ``pgid``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            found.append(f"{pid} {stat[: stat.rfind(')') + 1]}")
    return found


def _sigint_as_a_terminal_sends_it() -> None:
    """The CLI's SIGINT as in a terminal's foreground job. A command started in the background
    by a non-interactive shell (a CI script's ``cmd &``) inherits SIGINT ignored, and Python
    then installs no KeyboardInterrupt handler: the fresh-clone run of the suite sent its
    SIGINT into nothing and the job ran to its 120 s timeout."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_once_started(command: list[str], cwd: Path, started: str) -> tuple[int, str]:
    """Run ``command`` in its own session, SIGINT its group once stderr shows ``started``;
    its exit code and whole stderr."""
    cli = subprocess.Popen(
        command,
        env=ENV,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_sigint_as_a_terminal_sends_it,
    )
    assert cli.stderr is not None
    seen = []
    try:
        for line in cli.stderr:
            seen.append(line)
            if started in line:
                time.sleep(1.0)  # into the job's own loop, not its first instruction
                os.killpg(cli.pid, signal.SIGINT)
                break
        seen.append(cli.stderr.read())
        code = cli.wait(60)
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait(10)
    stderr = "".join(seen)
    assert started in stderr, stderr
    deadline = time.monotonic() + 10
    while _group(cli.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group(cli.pid) == [], _group(cli.pid)
    return code, stderr


#: Each command, and the progress line that says its job is running the target.
JOBS = {
    "profile": (["profile", "cases.py::spins"], "[torchscope] cold:"),
    "run": (["run", "--target", "cases.py::spins", "--", "python", "main.py"], "] called:"),
    "fix --try": (["fix", "infer.py::infer", "--try", "inference-mode"], "] check:"),
}


@pytest.mark.parametrize("command", sorted(JOBS))
def test_ctrl_c_prints_one_line_and_exits_130(cases: Path, command: str) -> None:
    (cases.parent / "main.py").write_text(MAIN)
    (cases.parent / "infer.py").write_text(INFER)
    args, started = JOBS[command]
    code, stderr = _interrupt_once_started([*TORCHSCOPE, *args], cases.parent, started)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.rstrip("\n").splitlines()[-1] == INTERRUPTED, stderr
    assert stderr.count(INTERRUPTED) == 1, stderr
    assert wait_no_leftovers(10.0, keep_servers=False) == []


def test_stdout_closed_early_ends_quietly() -> None:
    """``analyze --json | head -c 100``: the pipe holds one page, so the CLI is still writing
    when the reader has read its 100 bytes and gone."""
    command = [*TORCHSCOPE, "analyze", str(TRACES / "kineto_tiny_mlp_legacy_v100.json"), "--json"]
    cli = subprocess.Popen(
        command, env=ENV, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert cli.stdout is not None and cli.stderr is not None
    fcntl.fcntl(cli.stdout.fileno(), fcntl.F_SETPIPE_SZ, 4096)  # before the CLI writes
    head = os.read(cli.stdout.fileno(), 100)
    cli.stdout.close()
    stderr = cli.stderr.read().decode()
    code = cli.wait(60)
    assert head.startswith(b"{"), head
    assert code in (0, 141), (code, stderr)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert stderr == "", stderr
