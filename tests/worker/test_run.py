"""``torchscope run`` for real: a program runs in the worker and the targets are profiled on the
arguments it passes them; captures replay with ``torchscope profile``; every failure says what
happened and leaves no process behind (each run's processes carry a tag in their environment,
and /proc is scanned for it afterwards).

Kept lean for CI: tiny programs, ``--calls`` 2–4, ``OMP_NUM_THREADS=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, REPO

FAST = ["--steps", "2", "--warmup", "1", "--timing-budget", "0.3"]


def _env(tag: str) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO / "server"),
        "OMP_NUM_THREADS": "1",
        "TORCHSCOPE_RUN_TEST": tag,
    }


def _tagged(tag: str) -> list[str]:
    """Live processes whose environment carries ``tag``."""
    needle = f"TORCHSCOPE_RUN_TEST={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(f"{entry.name}: {cmdline[:120]}")
    return found


def torchscope(cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """One command; asserts that nothing it started is still running afterwards."""
    tag = uuid.uuid4().hex
    done = subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        cwd=cwd,
        env=_env(tag),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    deadline = time.monotonic() + 5
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _tagged(tag)
    for line in left:
        os.kill(int(line.split(":")[0]), 9)
    assert not left, f"processes left behind: {left}\n{done.stderr}"
    return done


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


MODEL = """\
    import torch


    def scale(x, factor):
        y = x * factor
        return y.sum()


    def apply(x, fn):
        return fn(x).sum()


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.relu(self.linear(x))
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    _write(tmp_path, "model.py", MODEL)
    return tmp_path


def _json_lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_real_model_run_capture_and_replay(tmp_path: Path, trace_dir: Path) -> None:
    """The acceptance example: Attention.forward reached through Module.__call__ inside a
    training loop over a DataLoader; the capture replays with `profile`, and the captured
    module on the captured inputs gives the run's output."""
    shutil.copy(EXAMPLES / "real_inputs" / "train.py", tmp_path / "train.py")
    spec = "train.py::Attention.forward"
    run = torchscope(
        tmp_path, "run", "--target", spec, "--calls", "3", "--capture", "--json",
        "--trace-dir", str(trace_dir), *FAST, "--", "python", "train.py", "--steps", "20",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    [data] = _json_lines(run)
    assert data["target"]["qualname"] == "Attention.forward" and data["verdict"]["id"]
    assert data["run"]["exit"] == "stopped" and data["run"]["calls_seen"] == 3
    assert data["run"]["callers"] == [{"file": "train.py", "line": 74, "calls": 3}]
    assert len(data["run"]["in_run_us"]) == 2 and data["timing"]["cold_us"] > 0
    capture = tmp_path / ".torchscope" / "inputs" / "train" / "Attention.forward.pt"
    assert data["inputs"]["source"] == "run" and data["inputs"]["path"] == str(capture)
    assert "step 1: loss" in run.stderr and "step 2:" not in run.stderr  # stopped in call 3
    assert any(line["line"] == 56 for line in data["lines"])  # the softmax @ v line, attributed

    replay = torchscope(tmp_path, "profile", spec, "--json", "--trace-dir", str(trace_dir), *FAST)
    assert replay.returncode == 0, replay.stderr
    [again] = _json_lines(replay)
    assert again["inputs"]["source"] == "capture" and again["inputs"]["path"] == str(capture)
    assert again["inputs"]["captured_at"]

    sys.path.insert(0, str(tmp_path))
    try:
        import torch
        import train  # type: ignore[import-not-found]

        from torchscope.worker.captures import read_capture

        saved = read_capture(str(capture), train, cuda=False)
        output = torch.load(str(capture).replace(".pt", ".output.pt"), weights_only=False)
        attention, x, mask = saved["args"]
        assert isinstance(attention, train.Attention) and x.shape == (16, 64, 128)
        assert torch.allclose(attention(x, mask), output, atol=1e-6)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("train", None)


def test_pytest_entry_reports_the_test_outcome(workspace: Path, trace_dir: Path) -> None:
    _write(
        workspace,
        "test_model.py",
        """\
        import torch
        from model import Net


        def test_net():
            net = Net()
            for _ in range(3):
                net(torch.randn(4, 8))
            assert False, "the test's own failure"
        """,
    )
    run = torchscope(
        workspace, "run", "--target", "model.py::Net.forward", "--calls", "2", "--json",
        "--trace-dir", str(trace_dir), *FAST, "--", "pytest", "test_model.py::test_net", "-q",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    [data] = _json_lines(run)
    assert data["run"]["test"] == "failed" and data["run"]["exit"] == "failed"
    assert data["run"]["calls_seen"] == 3  # the test went on after the profile
    assert data["run"]["callers"][0]["file"] == "test_model.py"
    assert "the test's own failure" in run.stderr


def test_program_exits_before_calling_the_target(workspace: Path) -> None:
    _write(
        workspace,
        "main.py",
        """\
        import sys
        import model
        print("no data found", file=sys.stderr)
        sys.exit(3)
        model.scale(1, 2)
        """,
    )
    run = torchscope(workspace, "run", "--target", "model.py::scale", "--", "python", "main.py")
    assert run.returncode == 1
    assert "exit code 3 before calling scale" in run.stderr
    assert "its last stderr lines:\nno data found" in run.stderr


def test_os_exit_after_calls_and_a_target_never_loaded(workspace: Path, trace_dir: Path) -> None:
    """Fewer calls than --calls: the last call is profiled; os._exit ends the program, not the
    worker; a target whose file the program never imports is named."""
    _write(workspace, "unused.py", "def never(x):\n    return x\n")
    _write(
        workspace,
        "main.py",
        """\
        import os
        import torch
        import model
        for _ in range(2):
            model.scale(torch.ones(4), 2.0)
        os._exit(4)
        """,
    )
    run = torchscope(
        workspace, "run", "--target", "model.py::scale", "--target", "unused.py::never",
        "--calls", "5", "--json", "--trace-dir", str(trace_dir), *FAST, "--", "python", "main.py",
    )  # fmt: skip
    assert run.returncode == 1, run.stderr  # one target was not profiled
    [data] = _json_lines(run)
    assert data["target"]["qualname"] == "scale" and data["run"]["calls_seen"] == 2
    assert data["run"]["exit"] == "failed" and data["run"]["exit_code"] == 4
    assert "without loading" in run.stderr and "never was never found" in run.stderr


def test_timeout_before_the_first_call(workspace: Path) -> None:
    _write(workspace, "main.py", "import time\nimport model\ntime.sleep(120)\n")
    run = torchscope(
        workspace, "run", "--target", "model.py::scale", "--timeout", "8", "--", "main.py"
    )
    assert run.returncode == 1
    assert "did not call scale within 8 s" in run.stderr


def test_dataloader_workers_and_subprocesses_die_with_the_job(
    tmp_path: Path, trace_dir: Path
) -> None:
    shutil.copy(EXAMPLES / "real_inputs" / "train.py", tmp_path / "train.py")
    _write(
        tmp_path,
        "spawning.py",
        """\
        import subprocess, sys
        subprocess.Popen(["sleep", "300"])
        sys.argv = ["train.py", "--workers", "2", "--steps", "6"]
        import train
        train.main()
        """,
    )
    run = torchscope(
        tmp_path, "run", "--target", "train.py::Attention.forward", "--calls", "2",
        "--trace-dir", str(trace_dir), *FAST, "--", "python", "spawning.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "run: `python spawning.py` stopped" in run.stdout
    assert "calls seen: 2, from train.py:74 (2)" in run.stdout


def test_capture_refuses_what_cannot_be_saved(workspace: Path, trace_dir: Path) -> None:
    """A lambda argument is named with its type; arguments over the limit are not written; the
    profiles in the run go on."""
    _write(
        workspace,
        "main.py",
        """\
        import torch
        import model
        model.scale(torch.ones(1_000_000), 2.0)
        model.apply(torch.ones(4), lambda t: t * 2)
        """,
    )
    run = torchscope(
        workspace, "run", "--target", "model.py::scale", "--target", "model.py::apply",
        "--capture", "--capture-limit", "1000000", "--calls", "1", "--json",
        "--trace-dir", str(trace_dir), *FAST, "--", "python", "main.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert [d["target"]["qualname"] for d in _json_lines(run)] == ["scale", "apply"]
    assert "the arguments of scale are over the capture limit of 976.6 KiB" in run.stderr
    assert "the arguments of apply cannot be saved" in run.stderr
    assert "`fn` (function)" in run.stderr
    assert not (workspace / ".torchscope" / "inputs" / "model").exists() or not any(
        (workspace / ".torchscope" / "inputs" / "model").glob("*.pt")
    )


def test_a_capture_replays_under_diff_on_both_sides(workspace: Path, trace_dir: Path) -> None:
    """``diff`` with no call expression replays the capture on the file as committed and as
    edited: the same real arguments on both sides (the earlier side once had none)."""
    _write(workspace, "main.py", "import torch\nimport model\nmodel.scale(torch.randn(256, 256), 2.0)\n")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True)
    subprocess.run([*git, "add", "model.py"], cwd=workspace, check=True)
    subprocess.run([*git, "commit", "-qm", "scale"], cwd=workspace, check=True)
    run = torchscope(
        workspace, "run", "--target", "model.py::scale", "--capture", "--calls", "1", "-q",
        "--trace-dir", str(trace_dir), *FAST, "--", "python", "main.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    edited = (workspace / "model.py").read_text().replace("y = x * factor", "y = (x * factor) @ x")
    (workspace / "model.py").write_text(edited)
    diff = torchscope(
        workspace, "diff", "model.py::scale", "--json", "--trace-dir", str(trace_dir), *FAST
    )
    assert diff.returncode == 0, diff.stderr
    [data] = _json_lines(diff)
    assert data["diff"]["verdict"]["id"] == "slower", data["diff"]["verdict"]  # a 256³ matmul more
    assert "aten::mm" in {op["name"] for op in data["diff"]["ops_changed"]}


def test_module_entry_nested_decorated_and_installed_targets(tmp_path: Path, trace_dir: Path) -> None:
    """``-m package.module``; a function under ``functools.wraps``, a function nested in it,
    and ``nn.Linear.forward`` in the installed torch (patched where it lives)."""
    import torch.nn.modules.linear as linear

    (tmp_path / "pkg").mkdir()
    _write(tmp_path / "pkg", "__init__.py", "")
    _write(
        tmp_path / "pkg",
        "model.py",
        """\
        import functools
        import torch


        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper


        @logged
        def step(lin, x):
            def inner(y):
                return torch.relu(y) * 2
            return inner(lin(x)).sum()
        """,
    )
    _write(
        tmp_path / "pkg",
        "main.py",
        """\
        import torch
        from pkg.model import step

        lin = torch.nn.Linear(16, 16)
        for _ in range(4):
            step(lin, torch.randn(8, 16))
        """,
    )
    run = torchscope(
        tmp_path, "run", "--target", "pkg/model.py::step",
        "--target", "pkg/model.py::step.<locals>.inner",
        "--target", f"{linear.__file__}::Linear.forward", "--calls", "2", "--json",
        "--trace-dir", str(trace_dir), *FAST, "--", "-m", "pkg.main",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    step, inner, forward = _json_lines(run)
    assert step["run"]["entry"] == "python -m pkg.main" and step["run"]["exit"] == "stopped"
    assert step["run"]["callers"] == [{"file": "pkg/main.py", "line": 6, "calls": 2}]
    assert inner["target"]["qualname"] == "step.<locals>.inner"
    assert inner["run"]["callers"] == [{"file": "pkg/model.py", "line": 16, "calls": 2}]
    assert any(line["line"] == 15 for line in inner["lines"])  # the nested def's own line
    assert forward["run"]["callers"] == [{"file": "pkg/model.py", "line": 16, "calls": 2}]
