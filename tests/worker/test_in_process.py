"""``torchscope.profile(fn, *args)``: the worker's passes in this process, on real torch (CPU)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import torch

import torchscope
from torchscope.notebook import ProfileError
from torchscope.notebook.magics import MagicUsage, parse

FAST = {"steps": 3, "warmup": 1, "timing_budget_s": 0.2}


def fn(x, w):
    y = torch.matmul(x, w)
    return torch.relu(y).sum()


def failing(x):
    y = x * 2
    raise ValueError(f"bad input {y.shape[0]}")


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 64)

    def forward(self, x):
        h = self.linear(x)
        return torch.tanh(h)


def _line_of(func: object, text: str) -> int:
    lines, first = inspect.getsourcelines(func)  # type: ignore[arg-type]
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_profile_returns_the_cli_report_with_lines() -> None:
    report = torchscope.profile_with(FAST, fn, torch.randn(256, 256), torch.randn(256, 256))
    assert report.verdict.id in ("compute-bound", "overhead-bound", "memory-bound")
    data = json.loads(json.dumps(report.to_json()))
    assert data["verdict"]["id"] == report.verdict.id
    assert data["in_process"] is True and data["target"]["qualname"] == "fn"
    assert {line["line"] for line in data["lines"]} <= {
        _line_of(fn, "matmul"),
        _line_of(fn, "relu"),
    }
    assert len(data["steps"]) == 3
    assert "not in an isolated worker" in report.text()
    bundle = report._repr_mimebundle_()
    assert {"text/html", "text/plain", "application/vnd.torchscope.report+json"} <= set(bundle)
    assert not torch.autograd._profiler_enabled()


def test_a_module_call_attributes_lines_in_forward() -> None:
    report = torchscope.profile_with(FAST, Block(), torch.randn(32, 64))
    lines = {line["line"] for line in report.to_json()["lines"]}
    assert _line_of(Block.forward, "self.linear(x)") in lines
    assert report.outcome.target.qualname == "Block.forward"


def test_a_call_that_raises_shows_the_users_traceback_and_stops_the_profiler() -> None:
    with pytest.raises(ProfileError) as caught:
        torchscope.profile(failing, torch.randn(4))
    failure = caught.value
    assert failure.kind == "call-raised"
    assert isinstance(failure.__cause__, ValueError)
    assert "bad input 4" in failure.traceback and "in failing" in failure.traceback
    assert "/torchscope/worker/" not in failure.traceback
    assert not torch.autograd._profiler_enabled()


def test_keyboard_interrupt_in_the_profiled_pass_stops_the_profiler_cleanly() -> None:
    threads = torch.get_num_threads()

    def interrupted(x):
        if torch.autograd._profiler_enabled():
            raise KeyboardInterrupt  # what Ctrl-C raises here, mid-profile
        return x + 1

    with pytest.raises(KeyboardInterrupt):
        torchscope.profile_with(FAST, interrupted, torch.randn(4))
    assert not torch.autograd._profiler_enabled()
    assert torch.get_num_threads() == threads
    assert torchscope.profile_with(FAST, fn, torch.randn(8, 8), torch.randn(8, 8)).verdict.id


def test_magic_flags_are_the_clis() -> None:
    args, expression = parse('--steps 4 --memory --sweep N=8,64 fn(torch.randn({N}), "a b")')
    assert (args.steps, args.memory, args.sweep) == (4, True, ("N", [8, 64]))
    assert expression == 'fn(torch.randn({N}), "a b")'
    args, expression = parse("--compare-compile --mode=reduce-overhead model(x)")
    assert args.compare_compile and args.compile_mode == "reduce-overhead"
    with pytest.raises(MagicUsage, match="--steps"):
        parse("--steps 0 fn(x)")
    with pytest.raises(MagicUsage, match="--nproc"):
        parse("--nproc 2 fn(x)")


@pytest.mark.slow
def test_sweep_in_process_finds_both_sides() -> None:
    from torchscope.notebook.api import sweep_calls

    namespace = {"fn": fn, "torch": torch}
    report = sweep_calls("fn(torch.randn({N}, {N}), torch.randn({N}, {N}))", "N", [8, 512],
                         namespace, FAST)
    sweep = report.to_json()["sweep"]
    assert [p["N"] for p in sweep["points"]] == [8, 512]
    assert "<svg" in report.html()


@pytest.mark.slow
def test_compare_compile_in_process_gives_the_cli_comparison(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``%torchscope --compare-compile``: eager and compiled profiled in this process, with the
    CLI's comparison (its verdict ids and JSON) attached to the report."""
    from torchscope.analysis.multi.comparison import VERDICTS
    from torchscope.notebook.api import compare_call, prepare

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # no old Inductor cache
    namespace = {"fn": fn, "torch": torch}
    prepared = prepare("fn(torch.randn(64, 64), torch.randn(64, 64))", namespace)
    report = compare_call(prepared, FAST)
    data = json.loads(json.dumps(report.to_json()))
    compare = data["compare"]
    assert compare["error"] is None, compare["error"]
    assert compare["compiled"] is not None and compare["verdict"]["id"] in VERDICTS
    assert data["verdict"]["id"] == report.verdict.id  # the eager profile's verdict
    assert not torch.autograd._profiler_enabled()
