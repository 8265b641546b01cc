"""``torchscope profile`` / ``analyze`` as a user runs them: a real subprocess, real torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO / "server")}
SMALL = "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))"


def torchscope(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_profile_json_has_the_documented_schema(trace_dir: Path) -> None:
    trace_dir.chmod(0o750)  # the user's own folder: used as it is, never chmodded
    run = torchscope(
        "profile",
        "examples/matmul_add.py::fn",
        "--call",
        SMALL,
        "--json",
        "--steps",
        "3",
        "--trace-dir",
        str(trace_dir),
    )
    assert run.returncode == 0, run.stderr
    [line] = run.stdout.strip().splitlines()
    data = json.loads(line)
    assert data["target"] == {"file": "examples/matmul_add.py", "qualname": "fn", "line": 14}
    assert data["device"]["kind"] == "cpu"
    assert set(data["verdict"]) >= {"id", "headline", "cpu_us", "device_us"}
    assert set(data["timing"]) >= {"cold_us", "min_us", "median_us", "max_us", "calls"}
    assert isinstance(data["findings"], list)
    assert {"name", "calls", "self_cpu_us", "device_us"} <= set(data["top_ops"][0])
    trace = Path(data["trace_path"])
    assert trace.parent == trace_dir and trace.name.endswith(".json.gz") and trace.is_file()
    # the trace is private (0600); a folder the user named is theirs and keeps its mode
    assert oct(trace.stat().st_mode & 0o777) == "0o600"
    assert oct(trace_dir.stat().st_mode & 0o777) == "0o750"
    assert "[torchscope] timing" in run.stderr  # progress goes to stderr, JSON alone to stdout


def test_profile_text_runs_every_directive(trace_dir: Path) -> None:
    run = torchscope(
        "profile", "examples/matmul_add.py::fn", "--steps", "2", "--trace-dir", str(trace_dir), "-q"
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert (
        out.count("== fn (examples/matmul_add.py:14)") == 2
    )  # 8×8 and 1024×1024; CUDA ones skipped
    small, large = [ln for ln in out.splitlines() if ln.startswith("verdict: ")]
    assert small.startswith("verdict: overhead-bound"), out  # 8×8: dispatch (or threads)
    # 1024×1024: compute-bound, unless this run measured the intra-op threads as the cause
    # (a core taken by another process stalls them; the verdict must then say so).
    assert large.startswith("verdict: compute-bound") or "thread" in large, out
    assert "first call" in out and "median" in out
    assert out.count("trace: ") == 2


def test_zero_argument_function_and_print_protection(trace_dir: Path) -> None:
    run = torchscope(
        "profile",
        "samples.py::chatty",
        "--call",
        "chatty(torch.ones(2))",
        "--json",
        "--trace-dir",
        str(trace_dir),
        cwd=FIXTURES,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["target"]["qualname"] == "chatty"
    assert "hello from user code" in run.stderr and "hello" not in run.stdout


def test_errors_exit_non_zero_with_a_clear_message(trace_dir: Path) -> None:
    missing = torchscope(
        "profile", "samples.py::needs_args", "--trace-dir", str(trace_dir), cwd=FIXTURES
    )
    assert missing.returncode == 1
    assert (
        "needs arguments" in missing.stderr
        and "# torchscope: needs_args(x=…, w=…)" in missing.stderr
    )
    no_function = torchscope("profile", "samples.py::nope", cwd=FIXTURES)
    assert no_function.returncode == 2 and "no function 'nope'" in no_function.stderr
    bad_spec = torchscope("profile", "samples.py")
    assert bad_spec.returncode == 2 and "FILE::FUNCTION" in bad_spec.stderr
    raising = torchscope(
        "profile",
        "samples.py::raises",
        "--call",
        "raises(1)",
        "--trace-dir",
        str(trace_dir),
        cwd=FIXTURES,
    )
    assert raising.returncode == 1 and "boom from user code" in raising.stderr
    assert "samples.py:19" in raising.stderr


def test_analyze_reads_the_trace_profile_wrote(trace_dir: Path) -> None:
    run = torchscope(
        "profile",
        "examples/matmul_add.py::fn",
        "--call",
        SMALL,
        "--json",
        "--trace-dir",
        str(trace_dir),
        "-q",
    )
    trace = json.loads(run.stdout)["trace_path"]
    analyzed = torchscope("analyze", trace, "--json")
    assert analyzed.returncode == 0, analyzed.stderr
    data = json.loads(analyzed.stdout)
    assert data["device"]["kind"] == "cpu" and len(data["steps"]) == 5


def test_analyze_rejects_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.json"
    bogus.write_text('{"hello": 1}')
    run = torchscope("analyze", str(bogus))
    assert run.returncode == 1 and "notes.json" in run.stderr


SCALE = '''import torch


class Scale(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

{directive}    def forward(self, x):
        return x * self.factor
'''


def test_a_method_s_hint_is_a_directive_that_works(tmp_path: Path, trace_dir: Path) -> None:
    # The hint once read `# torchscope: forward(x=…)` (NameError: 'forward' is not defined)
    # and "answer the prompt", which the CLI has none of.
    model = tmp_path / "model.py"
    model.write_text(SCALE.format(directive=""))
    run = torchscope("profile", f"{model}::Scale.forward", "--trace-dir", str(trace_dir))
    assert run.returncode == 1
    assert "prompt" not in run.stderr
    hint = run.stderr.split("`# torchscope: ")[1].split("`")[0]
    assert hint == "Scale(factor=…).forward(x=…)", run.stderr
    filled = hint.replace("factor=…", "factor=2.0").replace("x=…", "x=torch.randn(8, 8)")
    model.write_text(SCALE.format(directive=f"    # torchscope: {filled}\n"))
    run = torchscope("profile", f"{model}::Scale.forward", "--trace-dir", str(trace_dir))
    assert run.returncode == 0, run.stderr
    assert "== Scale.forward" in run.stdout or "Scale.forward" in run.stdout


def test_an_invalid_call_expression_is_told_before_a_worker_starts(trace_dir: Path) -> None:
    run = torchscope("profile", "examples/matmul_add.py::fn", "--call", "fn((")
    assert run.returncode == 1
    assert "call expression `fn((` is not valid Python: '(' was never closed" in run.stderr
    assert "starting a worker" not in run.stderr, run.stderr
