"""Achieved FLOP/s and bandwidth against this machine's calibrated peaks, on real torch.

Every independent number here is measured in the test with ``torch.utils.benchmark`` at the
worker's thread count. This machine is shared (2 cores, other jobs running), so the
independent measurements are repeated in rounds and their medians compared.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.utils.benchmark as benchmark

from tests.conftest import EXAMPLES, REPO
from torchscope.host.profile_run import PROFILE, ProfileOutcome, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, Progress, to_builtins
from torchscope.source.targets import function_named, read_source
from torchscope.worker import calibrate

SAMPLES = REPO / "tests" / "fixtures" / "workspace" / "efficiency_samples.py"


@pytest.fixture(scope="module", autouse=True)
def fresh_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder of our own: the first profile must calibrate."""
    folder = tmp_path_factory.mktemp("cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


def profile(file: Path, name: str, call: str, trace_dir: Path) -> tuple[ProfileOutcome, list[str]]:
    target = function_named(read_source(file), str(file), name)
    said: list[str] = []

    def progress(message: Progress) -> None:
        said.append(f"{message.stage}: {message.message}")

    async def go() -> ProfileOutcome:
        profiler = Profiler(sys.executable, TraceStore(trace_dir))
        try:
            options = JobOptions(steps=5, warmup=2)
            return await profiler.run_job(PROFILE, target, call, options, progress)
        finally:
            await profiler.close()

    return asyncio.run(go()), said


def op(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(o for o in data["top_ops"] if o["name"] == name)


def rules(data: dict[str, Any]) -> set[str]:
    return {f["rule"] for f in data["findings"]}


def test_seed_function_mm_rate_and_calibrated_peak(tmp_path: Path) -> None:
    n = 1024
    call = f"fn(torch.randn({n}, {n}), torch.randn({n}, {n}), torch.randn({n}, {n}))"
    outcome, said = profile(EXAMPLES / "matmul_add.py", "fn", call, tmp_path)
    data = to_builtins(outcome)
    assert any(s.startswith("calibrate: calibrating") for s in said), said
    assert data["peaks"]["source"] == "measured"
    mm = op(data, "aten::mm")
    steps = len(data["steps"])
    by_hand = 2 * n**3 * (mm["calls"] / steps) / mm["cpu_us"] / 1e3
    assert mm["gflops"] == pytest.approx(by_hand, rel=0.05)
    peak = data["peaks"]["matmul_gflops"]["float32"]
    assert mm["efficiency"] == pytest.approx(min(1.0, mm["gflops"] / peak), rel=1e-6)
    # The verdict's efficiency is the call's: its GEMM FLOPs (one 2n³ matmul) over the
    # unprofiled time per call it ran (its wait for a CPU another process held set aside),
    # against the same peak (issue 30: compute near peak, the add and the dispatch included).
    ran = data["verdict"]["cpu_us"] - data["timing"]["wait_us"]
    per_call = 2 * n**3 / ran / 1e3
    assert data["verdict"]["efficiency"] == pytest.approx(min(1.0, per_call / peak), rel=1e-6)
    assert "GFLOP/s" in data["verdict"]["headline"]

    # The calibration (the fastest repetition) against torch.utils.benchmark in interleaved
    # rounds: at least its median rate (medians of the rounds), at most its fastest sample of
    # all rounds (other jobs on this shared machine come and go within a second; ±15 %).
    size = calibrate.CPU_GEMM_N
    a, b = torch.randn(size, size), torch.randn(size, size)
    timer = benchmark.Timer(
        "torch.mm(a, b)",
        globals={"torch": torch, "a": a, "b": b},
        num_threads=torch.get_num_threads(),
    )
    ours, typical, best, took = [], [], [], []
    for _ in range(3):
        start = time.perf_counter()
        ours.append(calibrate.peaks("cpu", [], force=True)["matmul_gflops"]["float32"])
        took.append(time.perf_counter() - start)
        measured = timer.blocked_autorange(min_run_time=1.0)
        typical.append(2 * size**3 / measured.median / 1e9)
        best.append(2 * size**3 / min(measured.times) / 1e9)
    numbers = f"calibrated {ours}, benchmark median {typical}, fastest {best} GFLOP/s"
    print(numbers)
    assert statistics.median(ours) >= 0.85 * statistics.median(typical), numbers
    assert statistics.median(ours) <= 1.15 * max(best), numbers
    assert statistics.median(took) < 2.0


def test_thin_gemm_is_flagged_and_square_is_not(tmp_path: Path) -> None:
    thin, _ = profile(
        SAMPLES, "thin_gemm", "thin_gemm(torch.randn(4096, 8), torch.randn(8, 4096))", tmp_path
    )
    data = to_builtins(thin)
    assert "low-efficiency-gemm" in rules(data) or data["verdict"]["id"] == "memory-bound"
    square, _ = profile(
        SAMPLES,
        "square_gemm",
        "square_gemm(torch.randn(1024, 1024), torch.randn(1024, 1024))",
        tmp_path,
    )
    data = to_builtins(square)
    assert "low-efficiency-gemm" not in rules(data)
    assert data["verdict"]["id"] != "memory-bound"
    assert data["verdict"]["id"] == "compute-bound"


def chain_round(tmp_path: Path) -> tuple[float, float, str]:
    """One profile of the chain followed by ``y.copy_(x)`` on the same buffers: (chain GB/s,
    copy GB/s, the numbers in words), after checking what must hold whatever the load. The
    copy runs in the same calls, at the same thread count, so load on the shared machine hits
    both alike (a copy timed in the test process before and after the profile read 23 or 90
    GB/s by where the scheduler put its threads while a core was held)."""
    outcome, _ = profile(
        SAMPLES,
        "chain_then_copy",
        "chain_then_copy(torch.rand(4096, 4096), torch.empty(4096, 4096))",
        tmp_path,
    )
    data = to_builtins(outcome)
    chain = next((f for f in data["findings"] if f["rule"] == "memory-bound-chain"), None)
    copy = next((op for op in data["top_ops"] if op["name"] == "aten::copy_"), None)
    numbers = (
        f"chain {chain and chain['details']['gbps']} GB/s, copy_ {copy and copy['gbps']} GB/s, "
        f"peak {data['peaks']['bandwidth_gbps']} GB/s; {data['verdict']['headline']}"
    )
    print(numbers)
    assert data["verdict"]["id"] == "memory-bound", numbers
    assert "arithmetic intensity" in data["verdict"]["headline"]
    assert "ridge point" in data["verdict"]["headline"]
    assert chain is not None and chain["details"]["ops"] == 6, numbers
    assert copy is not None and copy["gbps"], numbers
    # Each out= op reads one 64 MiB buffer and writes the other (a Python scalar: 8 bytes more).
    per_chain = chain["details"]["bytes_per_step"] / chain["details"]["runs_per_step"]
    assert per_chain == pytest.approx(6 * 2 * 4096 * 4096 * 4, rel=1e-4)
    return chain["details"]["gbps"], copy["gbps"], numbers


def test_elementwise_chain_is_memory_bound_at_copy_bandwidth(tmp_path: Path) -> None:
    """Six out= ops ping-ponging between two 4096² buffers move bytes as a copy does: the
    chain's GB/s is held against ``y.copy_(x)`` profiled right after it in the same calls. Up
    to three rounds are run until one agrees within ±25 %; counting bytes wrong (an out tensor
    read too: 1.5×) or an in-place chain (2.3×) fails every round."""
    seen: list[str] = []
    for _ in range(3):
        chain, copy, numbers = chain_round(tmp_path)
        seen.append(numbers)
        if chain == pytest.approx(copy, rel=0.25):
            return
    pytest.fail("chain GB/s never within ±25 % of copy_:\n" + "\n".join(seen))


def test_cached_peaks_correct_themselves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare number from an older cache, an entry measured under more load than now, and a
    week-old one are measured again (keeping the higher peak, unless week-old); a fresh calm
    entry is used as it is."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    now, cores = time.time(), os.cpu_count() or 1
    key = calibrate.cache_key("cpu", "copy")
    gemm = calibrate.cache_key("cpu", "float32")

    def cached(copy: Any, float32: Any) -> dict[str, Any]:
        file = calibrate.cache_dir() / calibrate.CACHE_FILE
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps({key: copy, gemm: float32}), encoding="utf-8")
        said: list[str] = []
        got = calibrate.peaks("cpu", [], on_calibrate=said.append)
        return {"said": said, "copy": got["bandwidth_gbps"], "gemm": got["matmul_gflops"]}

    def entry(value: float, age_s: float, load: float) -> dict[str, Any]:
        return {"value": value, "at": now - age_s, "load": load, "cores": cores}

    calm = entry(1e6, 60.0, 0.0)  # impossibly high: used as is, nothing is measured
    assert cached(calm, calm) == {"said": [], "copy": 1e6, "gemm": {"float32": 1e6}}
    old = cached(0.001, calm)  # a bare number: measured again, the real bandwidth replaces it
    assert "older torchscope" in old["said"][0] and old["copy"] > 1.0
    assert old["gemm"] == {"float32": 1e6}
    if (calibrate.load_average() or 0.0) < 1e5:  # under more load than now: measured again
        loaded = cached(entry(0.001, 2 * calibrate.RETRY_S, 1e5), calm)
        assert "under load" in loaded["said"][0] and loaded["copy"] > 1.0
        higher = cached(entry(1e6, 2 * calibrate.RETRY_S, 1e5), calm)  # the higher one stays
        assert higher["said"] and higher["copy"] == 1e6
        recent = cached(entry(0.001, 60.0, 1e5), calm)  # tried again only after RETRY_S
        assert recent["said"] == [] and recent["copy"] == 0.001
    aged = cached(entry(1e6, 8 * 24 * 3600.0, 0.0), calm)  # a week old: replaced
    assert "older than a week" in aged["said"][0] and 1.0 < aged["copy"] < 1e6
    stored = json.loads((calibrate.cache_dir() / calibrate.CACHE_FILE).read_text())
    assert stored[key]["cores"] == cores and stored[key]["at"] >= now


def test_the_prestarted_worker_calibrates_nothing_and_the_first_job_does_once(
    tmp_path: Path,
) -> None:
    """Issue 53: the prestarted worker imports torch and warms the CPU profiler, nothing more
    (on a GPU box a calibration at start would run on the GPU before any job asked for it).
    The first job calibrates the device it ran on and caches the peaks; the next reads them."""
    cache = tmp_path / "cache"
    stored = cache / "torchscope" / calibrate.CACHE_FILE
    target = function_named(read_source(SAMPLES), str(SAMPLES), "square_gemm")
    call = "square_gemm(torch.randn(256, 256), torch.randn(256, 256))"
    first: list[str] = []
    second: list[str] = []

    async def go() -> bool:
        # The worker's cache folder through the env it is started with (torchscope.env).
        env = {"XDG_CACHE_HOME": str(cache)}
        profiler = Profiler(sys.executable, TraceStore(tmp_path / "traces"), env=env)
        try:
            assert await profiler.warm()
            calibrated_at_start = stored.exists()
            for said in (first, second):
                await profiler.run_job(
                    PROFILE,
                    target,
                    call,
                    JobOptions(steps=2, warmup=1),
                    lambda m, said=said: said.append(f"{m.stage}: {m.message}"),
                )
            return calibrated_at_start
        finally:
            await profiler.close()

    assert asyncio.run(go()) is False
    assert any(s.startswith("calibrate: calibrating") for s in first), first
    assert not any(s.startswith("calibrate:") for s in second), second
    keys = json.loads(stored.read_text())
    assert keys and all("|cpu:" in key for key in keys), keys  # a CPU job calibrates the CPU
