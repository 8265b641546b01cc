"""Two regimes of busy share and borderline verdicts (issue 29, items 3 and 4), on hand-built
bimodal traces and on the vendored trace the issue names."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscope.analysis import Report, analyze_trace
from torchscope.protocol import to_builtins

from .conftest import KinetoBuilder

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def bimodal(slow: tuple[int, ...], n: int = 6) -> KinetoBuilder:
    """``n`` steps: the ``slow`` ones wait 2 ms on the DataLoader then run a 1 ms kernel
    (busy 1/3), the others run a 990 µs kernel in a 1 ms step (busy 99 %)."""
    b = KinetoBuilder()
    for k in range(n):
        ts = 10_000.0 * k
        if k in slow:
            b.step(k + 1, ts, 3000)
            b.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts, 2000)
            b.launch(ts + 2000, 5, "sgemm", ts + 2000, 1000)
        else:
            b.step(k + 1, ts, 1000)
            b.launch(ts + 5, 5, "sgemm", ts + 10, 990)
    return b


def run(b: KinetoBuilder, tmp_path: Path) -> Report:
    return analyze_trace(b.write(tmp_path / "t.json"))


def test_two_regimes_decide_on_the_steady_steps_totals(tmp_path: Path) -> None:
    report = run(bimodal(slow=(1, 3, 5)), tmp_path)
    # Three steps each way: the steady regime is where the run spends its time (the slow
    # steps), and the verdict's figures are its totals: 3 ms busy of 9 ms.
    assert report.verdict.id == "input-bound"
    assert report.verdict.overhead_share == pytest.approx(1 - 3000 / 9000)
    (f,) = [f for f in report.findings if f.rule == "step-regimes"]
    assert f.details["steady"] == ["ProfilerStep#2", "ProfilerStep#4", "ProfilerStep#6"]
    assert f.details["other"] == ["ProfilerStep#1", "ProfilerStep#3", "ProfilerStep#5"]
    assert f.details["steady_share"] == pytest.approx(1 / 3)
    assert f.details["other_share"] == pytest.approx(0.99)
    assert "3 steps at 33 % GPU busy" in f.message


def test_the_larger_regime_is_the_steady_one(tmp_path: Path) -> None:
    report = run(bimodal(slow=(2, 4)), tmp_path)
    (f,) = [f for f in report.findings if f.rule == "step-regimes"]
    assert f.details["steady_steps"] == 4 and f.details["other_steps"] == 2
    assert report.verdict.id == "compute-bound"
    assert report.verdict.overhead_share == pytest.approx(0.01)


def test_one_odd_step_is_no_regime(tmp_path: Path) -> None:
    report = run(bimodal(slow=(3,)), tmp_path)
    assert "step-regimes" not in [f.rule for f in report.findings]
    assert report.verdict.id == "compute-bound"
    assert report.verdict.borderline is None


def test_a_run_of_like_steps_has_no_regimes(tmp_path: Path) -> None:
    report = run(bimodal(slow=()), tmp_path)
    assert "step-regimes" not in [f.rule for f in report.findings]
    assert report.rules_skipped.get("step-regimes") is None


def test_borderline_names_the_runner_up_on_the_issue_trace() -> None:
    # Median busy share 80.7 % against the 80 % threshold; two steps at 57 % and 63 % are
    # overhead-bound on their own (their DataLoader waits are under 3 % of the step).
    report = analyze_trace(TRACES / "kineto_resnet50_train_workers4_v100.json.gz")
    v = report.verdict
    assert v.id == "compute-bound"
    assert v.borderline is not None
    assert (v.borderline.runner_up, v.borderline.steps, v.borderline.of) == ("overhead-bound", 2, 6)
    assert 0 < v.borderline.margin < 0.01
    assert v.headline.startswith("compute-bound (borderline: overhead-bound on 2 of 6 steps): ")
    assert to_builtins(report)["verdict"]["borderline"]["runner_up"] == "overhead-bound"


def test_a_clear_verdict_is_not_borderline() -> None:
    report = analyze_trace(TRACES / "hta_resnet_v100_ns_units.json.gz")
    assert report.verdict.id == "compute-bound"
    assert report.verdict.borderline is None
    assert to_builtins(report)["verdict"]["borderline"] is None


def test_a_step_opening_with_python_names_the_functions(tmp_path: Path) -> None:
    b = KinetoBuilder()
    b.python("train.py(1): <module>", 0, 40_000)  # encloses every step: not named
    for k in range(3):
        ts = 10_000.0 * k
        b.step(k + 1, ts, 3000)
        b.python("train.py(10): preprocess", ts, 2000)
        b.python("numpy/core.py(5): stack", ts + 100, 500)
        b.launch(ts + 2000, 5, "sgemm", ts + 2010, 980)
    (f,) = [f for f in run(b, tmp_path).findings if f.rule == "gpu-idle"]
    assert f.details["functions"] == ["train.py(10): preprocess", "numpy/core.py(5): stack"]
    assert "the step opens with it, in Python: train.py(10): preprocess (2.0 ms)" in f.message


def test_a_step_opening_with_ops_names_their_call_stack_frames(tmp_path: Path) -> None:
    # torch 1.8-1.9 ``with_stack``: no python_function events, a ``Call stack`` arg on each
    # op (innermost frame first); the innermost frame outside torch is the one named.
    torch_frame = "/env/lib/python3.7/site-packages/torch/tensor.py(40): numpy"
    b = KinetoBuilder()
    for k in range(3):
        ts = 10_000.0 * k
        b.step(k + 1, ts, 3000)
        stack = f"{torch_frame};data.py(7): augment;train.py(30): <module>"
        b.op("aten::copy_", ts + 100, 1200, **{"Call stack": stack})
        b.op("aten::empty", ts + 150, 100, **{"Call stack": stack})  # nested: counted once
        b.op("aten::cat", ts + 1400, 400, **{"Call stack": "train.py(31): <module>"})
        b.op("aten::add", ts + 1900, 50)  # no stack: not named
        b.launch(ts + 2000, 5, "sgemm", ts + 2010, 980)
    (f,) = [f for f in run(b, tmp_path).findings if f.rule == "gpu-idle"]
    assert f.details["functions"] == ["data.py(7): augment", "train.py(31): <module>"]
    assert (
        "the step opens with it, in ops called from: data.py(7): augment (1.2 ms), "
        "train.py(31): <module> (400 µs)" in f.message
    )
