"""Measured fixes (issue 28) end to end: the real worker on real torch, the real CLI.

Each fix built so far is tried on a real function of ``tests/fixtures/workspace/fix_samples.py``
(copied to a temp folder: ``--apply`` writes it): the rewrite runs, its outputs match the
original's, and the measured direction is the one this CPU gives. A deliberately wrong rewrite
is refused as "changes the outputs", a raising one as "raises". The ``--list``/``--try``/
``--apply`` contract: no file changes without ``--apply``; with it, only a faster rewrite with
the same outputs is written.

The SDPA worker runs at the default thread count and its speed-up is checked against
``torch.utils.benchmark`` at ``torch.get_num_threads()``, as the issue asks; the fixes of
small ops run with ``OMP_NUM_THREADS=1`` (see ``test_diff.py``).
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import statistics
import subprocess
import sys
from collections.abc import Awaitable
from pathlib import Path
from typing import Callable, TypeVar

import pytest

from tests.conftest import FIXTURES
from torchscope.host.fix_run import measure_rewrite, try_fix
from torchscope.host.profile_run import Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions
from torchscope.source.fixes import fix_by_id
from torchscope.source.fixes.base import Rewrite
from torchscope.source.fixes.trial import CHANGES_OUTPUTS, NOT_FASTER, RAISES, FixTrial
from torchscope.source.targets import function_named, read_source

pytestmark = pytest.mark.slow

SAMPLES = FIXTURES / "fix_samples.py"
T = TypeVar("T")


@pytest.fixture
def samples(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return Path(shutil.copy(SAMPLES, work / "fix_samples.py"))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", "fix", *args, "--device", "cpu", "-q"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=400,
    )


def on_one_worker(file: Path, trace_dir: Path, work: Callable[[Profiler], Awaitable[T]]) -> T:
    """``work`` run with one real ``Profiler`` (one worker) in ``file``'s folder, then closed."""

    async def run() -> T:
        profiler = Profiler(sys.executable, TraceStore(trace_dir), cwd=str(file.parent))
        try:
            return await work(profiler)
        finally:
            await profiler.close()

    return asyncio.run(run())


def _trials(file: Path, trace_dir: Path, cases: list[tuple[str, str]]) -> list[FixTrial]:
    """Each ``(qualname, fix id)`` tried on one worker."""
    options = JobOptions(warmup=2, timing_budget_s=1.5, workspace_root=str(file.parent))

    async def work(profiler: Profiler) -> list[FixTrial]:
        out = []
        for qualname, fix_id in cases:
            target = function_named(read_source(file), str(file), qualname)
            trial, _ = await try_fix(profiler, target, None, options, fix_id)
            out.append(trial)
        return out

    return on_one_worker(file, trace_dir, work)


def test_sdpa_is_faster_with_the_same_outputs_and_agrees_with_torch_benchmark(
    samples: Path, trace_dir: Path
) -> None:
    done = _cli(f"{samples.name}::attention", "--try", "sdpa", "--json", cwd=samples.parent)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["verdict"] == "faster" and data["same_outputs"] is True, data
    assert data["refused"] is None and data["applied"] is False
    assert "+    return F.scaled_dot_product_attention(q, k, v" in data["patch"]
    assert samples.read_text() == SAMPLES.read_text()  # no --apply: the file is untouched
    lo, hi = data["interval"]
    assert 1 < lo <= data["ratio"] <= hi
    import torch

    rounds = reference_rounds(samples, "attention", "sdpa", threads=torch.get_num_threads())
    expected = statistics.median(rounds)
    # Both say faster, and by the same amount within a factor of two. At 8 × 1024 × 1024 the
    # original's scores, scaled scores and weights are 32 MiB each: above glibc's largest mmap
    # threshold, so they are mapped and faulted in on every call (~24.8k faults a call here)
    # whatever the heap's state, and SDPA never materialises them — the gain SDPA exists for.
    # Measured 3.3–3.4× in fresh processes, 3.6–3.9× with one core held. At 512 the scores
    # (8 MiB) stay on the heap and the gain moved with each process's cache and heap layout
    # (1.07–1.31× quiet, 1.04× in one full-suite run, 3.7× under load against the benchmark's
    # 1.3×): no size to assert a direction at.
    print(
        f"sdpa: torchscope {data['ratio']:.2f}× [{lo:.2f}, {hi:.2f}], torch.utils.benchmark "
        f"{expected:.2f}× (rounds {rounds[0]:.2f}–{rounds[-1]:.2f})"
    )
    assert expected > 1 and rounds[1] > 1  # the benchmark says faster too, in all but one round
    assert abs(math.log(data["ratio"] / expected)) <= math.log(2.0), (data["ratio"], rounds)


_REFERENCE = """
import importlib.util, json, sys
import torch
from torch.utils import benchmark
from torchscope.worker.compile_tools import steady_allocator
paths, qualname, call, threads, function = json.loads(sys.argv[1])
steady_allocator()  # the heap the trial's interleaved timing runs on
timers = []
for k, path in enumerate(paths):
    spec = importlib.util.spec_from_file_location(f"_reference{k}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ns = vars(module)
    torch.manual_seed(0)
    args, kwargs = eval(call.replace(qualname + "(", "(lambda *a, **k: (a, k))(", 1), ns)
    fn = eval(function, ns) if function else ns[qualname]  # a method's receiver, built once
    timers.append(benchmark.Timer(
        "fn(*a, **k)", globals={"fn": fn, "a": args, "k": kwargs}, num_threads=threads
    ))
ratios = []
for r in range(8):
    times = [0.0, 0.0]
    for i in (0, 1) if r % 2 == 0 else (1, 0):
        times[i] = timers[i].blocked_autorange(min_run_time=0.05).median
    ratios.append(times[0] / times[1])
print(json.dumps(sorted(ratios)))
"""


def reference_rounds(
    samples: Path, qualname: str, fix_id: str, device: str = "cpu", threads: int = 1
) -> list[float]:
    """original / rewrite per call of ``qualname`` on its directive's arguments, by
    ``torch.utils.benchmark`` at ``threads`` intra-op threads, one ratio per round, the two
    versions alternating so each round's pair saw the same load; sorted.

    Measured in a fresh process, with the heap settings the trial's interleaved timing uses
    (``steady_allocator``): glibc's heap state decides whether a function's fresh megabytes
    fault in on every call (a long-running pytest process made the original attention 4.2×
    slower than its rewrite, the worker 1.8×; a fresh process with glibc's dynamic thresholds
    read out-variant 7.8× where the steady trial read 1.08×, and 1.02× in another run)."""
    source = samples.read_text()
    rewrite = fix_by_id(fix_id).rewrite(source, qualname, device)  # type: ignore[union-attr]
    assert rewrite is not None, fix_id
    rewritten = samples.parent / f"rewritten_{qualname}.py"
    rewritten.write_text(rewrite.source)
    lines = source.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"def {qualname}("))
    directive = lines[at - 1].removeprefix("# torchscope: ") if at else ""
    call = directive if directive.startswith(qualname + "(") else f"{qualname}()"
    return benchmark_rounds([samples, rewritten], qualname, call, threads)


def benchmark_rounds(
    paths: list[Path], qualname: str, call: str, threads: int, function: str = ""
) -> list[float]:
    """``reference_rounds``' measurement: ``paths[0]`` / ``paths[1]`` per call of ``call``
    (``qualname(args…)``) by ``torch.utils.benchmark``, sorted; ``function``, when given, is
    the expression of the callable (a module built once, for a method), else ``qualname``."""
    spec = json.dumps([[str(p) for p in paths], qualname, call, threads, function])
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCE, spec],
        cwd=paths[0].parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ratios: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return ratios


def test_each_fix_runs_matches_and_agrees_with_torch_benchmark(
    samples: Path, trace_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each fix's rewrite runs with the same outputs, and its measured direction is the one
    ``torch.utils.benchmark`` gives the same two functions in the same run: never "faster"
    where the benchmark is not, never "slower" where it is not, and where the benchmark is
    clearly faster the trial's interval reaches the benchmark's gain. How much a fix gains moves with this machine (``out-variant`` saves fresh
    pages, which glibc's heap sometimes already recycles), so the reference is measured here,
    not fixed; most fixes must gain clearly, or the rewrites would not be fixes."""
    # Small ops: one intra-op thread, as in test_diff.py (a 2-thread op on a loaded 2-core
    # box waits a scheduler tick for its second thread, noise that is no part of the fix).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cases = [
        ("causal_attention", "sdpa"),
        ("predict", "inference-mode"),
        ("train_step", "zero-grad-none"),
        ("optimizer_step", "fused-optimizer"),
        ("decay", "foreach"),
        ("running_sum", "out-variant"),
        ("conv_forward", "channels-last"),  # oneDNN's NHWC convolutions on this CPU
    ]
    trials = _trials(samples, trace_dir, cases)
    faster = 0
    for (qualname, fix_id), trial in zip(cases, trials):
        rounds = reference_rounds(samples, qualname, fix_id)
        print(
            f"{fix_id} on {qualname}: {trial.message}; torch.utils.benchmark "
            f"{statistics.median(rounds):.2f}× (rounds {rounds[0]:.2f}–{rounds[-1]:.2f})"
        )
        assert trial.same_outputs, (fix_id, trial.message)
        assert trial.refused is None or trial.refused == NOT_FASTER, (fix_id, trial.message)
        assert trial.message.startswith("measured ")
        expected = statistics.median(rounds)
        # Never a contradiction: "faster" only where the benchmark is faster, "slower" only
        # where it is slower; "no difference" is the honest answer of a trial whose own
        # interval is wide on a busy machine (zero-grad-none once: 1.93×, interval 1.0–4.4×).
        if trial.verdict == "faster":
            faster += 1
            assert expected > 1, (fix_id, trial.message, rounds)
        if trial.verdict == "slower":
            assert expected < 1, (fix_id, trial.message, rounds)
        if rounds[1] > 1 and trial.verdict != "faster":
            hi = trial.interval[1] if trial.interval else 0.0
            assert 1.25 * hi >= expected, (fix_id, trial.message, rounds)  # it saw the gain
    assert 2 * faster >= len(cases), f"only {faster} of {len(cases)} fixes measured faster"


def test_a_wrong_rewrite_is_refused_as_changing_the_outputs_and_a_raising_one_as_raising(
    samples: Path, trace_dir: Path
) -> None:
    source = samples.read_text()
    good = fix_by_id("sdpa").rewrite(source, "attention", "cpu")  # type: ignore[union-attr]
    assert good is not None
    wrong = good.source.replace("scale=1 / math.sqrt(q.size(-1))", "scale=1.0")
    raising = good.source.replace("F.scaled_dot_product_attention(q, k, v", "F.nothing_here(q")
    assert wrong != good.source and raising != good.source
    target = function_named(source, str(samples), "attention")
    options = JobOptions(warmup=1, timing_budget_s=0.5, workspace_root=str(samples.parent))

    async def work(profiler: Profiler) -> list[tuple[FixTrial, Rewrite]]:
        return [
            await measure_rewrite(
                profiler, target, None, options, Rewrite("sdpa", text, (12,), "", source)
            )
            for text in (wrong, raising)
        ]

    (changed, _), (raised, _) = on_one_worker(samples, trace_dir, work)
    assert changed.refused == CHANGES_OUTPUTS and not changed.same_outputs
    assert "not offered: it changes the outputs" in changed.message
    assert "max difference" in changed.detail
    assert raised.refused == RAISES and raised.verdict is None
    assert "AttributeError" in raised.message and "not offered: it raises" in raised.message


def test_list_try_and_apply_contract(samples: Path) -> None:
    cwd, name = samples.parent, samples.name
    listed = _cli(f"{name}::attention", "--list", "--json", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    sdpa = fix_by_id("sdpa")
    assert sdpa is not None
    assert json.loads(listed.stdout) == {
        "fixes": [
            {
                "id": "sdpa",
                "line": 12,
                "title": "use F.scaled_dot_product_attention",
                "assumes": sdpa.assumes,
                "devices": ["cpu"],
            }
        ]
    }
    none = _cli(f"{name}::no_attention", "--list", "--json", cwd=cwd)
    assert json.loads(none.stdout) == {"fixes": []}

    original = samples.read_text()
    slower = _cli(f"{name}::passthrough", "--try", "inference-mode", "--apply", "--json", cwd=cwd)
    data = json.loads(slower.stdout)
    assert slower.returncode == 1 and data["refused"] == NOT_FASTER and not data["applied"], data
    assert samples.read_text() == original

    applied = _cli(f"{name}::train_step", "--try", "zero-grad-none", "--apply", "--json", cwd=cwd)
    data = json.loads(applied.stdout)
    assert applied.returncode == 0 and data["applied"] is True, (applied.stderr, data)
    # Only train_step's call is rewritten (zeroed_grad, further down, keeps its False).
    before = "model.zero_grad(set_to_none=False)\n    loss ="
    assert samples.read_text() == original.replace(before, before.replace("False", "True"))
    assert samples.read_text().count("set_to_none=False") == original.count("set_to_none=False") - 1

    unknown = _cli(f"{name}::attention", "--try", "nope", cwd=cwd)
    assert unknown.returncode == 2 and "no fix 'nope'" in unknown.stderr
    not_here = _cli(f"{name}::no_attention", "--try", "sdpa", cwd=cwd)
    assert not_here.returncode == 1 and "does not apply to no_attention" in not_here.stderr


def test_a_profiled_finding_that_has_a_fix_says_so(samples: Path) -> None:
    command = [sys.executable, "-m", "torchscope", "profile", f"{samples.name}::decay"]
    done = subprocess.run(
        [*command, "--device", "cpu", "--json", "-q", "--steps", "2"],
        cwd=samples.parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    findings = json.loads(done.stdout)["findings"]
    with_fix = [f for f in findings if "fix" in f]
    assert with_fix, findings
    assert all(f["rule"] == "many-calls" for f in with_fix)
    assert with_fix[0]["fix"] == {
        "rule": "foreach",
        "title": "torch._foreach_* over the list instead of a Python loop",
        "measured": None,
    }


def test_a_trial_the_first_rounds_cannot_decide_measures_again_and_says_so(
    tmp_path: Path,
) -> None:
    """The interval of the first job reaches the no-difference band while its ratio (0.75×)
    does not: the trial runs another job, and its progress says so."""
    work = tmp_path / "work"
    work.mkdir()
    file = Path(shutil.copy(FIXTURES / "fix_undecided.py", work / "fix_undecided.py"))
    options = JobOptions(warmup=1, timing_budget_s=0.5, workspace_root=str(work))
    said: list[str] = []

    async def trial(profiler: Profiler) -> FixTrial:
        target = function_named(read_source(file), str(file), "Wobbly.forward")
        call = "Wobbly()(torch.ones(4))"
        found, _ = await try_fix(
            profiler, target, call, options, "inference-mode", lambda p: said.append(p.message)
        )
        return found

    found = on_one_worker(file, tmp_path / "traces", trial)
    again = [m for m in said if m.startswith("measuring again (2/3): ")]
    assert again == [
        "measuring again (2/3): the interval reaches out of the no-difference band without "
        "clearing it"
    ]
    assert found.same_outputs and found.refused != CHANGES_OUTPUTS, found
