"""Each verdict on a hand-built trace that shows it, and the thresholds' edges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import Measurements, Report, TraceError, analyze_trace
from torchscope.analysis.results import Peaks
from torchscope.analysis.verdict.consistency import contradictions
from torchscope.analysis.verdict.verdict import COMPUTE_BOUND_BUSY, SYNC_BOUND_SHARE
from torchscope.protocol import to_builtins

from .conftest import KinetoBuilder


def run(b: KinetoBuilder, tmp_path: Path, m: Measurements | None = None) -> Report:
    return analyze_trace(b.write(tmp_path / "v.json.gz"), m)


def busy(b: KinetoBuilder, kernel_us: float, steps: int = 3) -> KinetoBuilder:
    for i in range(steps):
        t = i * 1000
        b.step(i + 1, t, 1000)
        b.op("aten::mm", t + 1, 8)
        b.launch(t + 2, 5, "ampere_sgemm_128x64_nn", t + 10, kernel_us)
    return b


def test_compute_bound(kineto: Any, tmp_path: Path) -> None:
    v = run(busy(kineto(), 900), tmp_path).verdict
    assert v.id == "compute-bound"
    assert v.headline == "compute-bound: GPU busy 90 % (900 µs of 1.0 ms)"
    assert v.device_us == pytest.approx(900)


def test_a_gpu_step_that_outlives_its_cpu_side_is_judged_by_its_span(
    kineto: Any, tmp_path: Path
) -> None:
    # As on an H200 at 4096x4096: the CPU returns 53 µs after launching a 2.7 ms GEMM, the
    # unprofiled calls synchronise (2.76 ms). The headline read "2.7 ms of 53 µs" and the
    # verdict "unstable: the profiled steps ran faster" since both took the CPU's wall.
    b = kineto()
    for i in range(3):
        t = i * 3000
        b.step(i + 1, t, 53)
        b.op("aten::mm", t + 1, 8)
        # the GEMM starts once the CPU side is done: its window alone shows an idle GPU
        b.launch(t + 2, 5, "sm90_xmma_gemm_f32f32", t + 60, 2740)
    m = Measurements(
        cold_us=3200.0,
        call_us=[2785.0, 2795.0, 2805.0],
        dispatch_floor_us=5.0,
        device_kind="cuda",
        device_name="NVIDIA H200",
    )
    report = run(b, tmp_path, m)
    v = report.verdict
    assert v.id == "compute-bound"
    assert v.headline == "compute-bound: GPU busy 98 % (2.7 ms of 2.8 ms)", v.headline
    assert v.stable, v.unstable_reason
    assert report.profiler_overhead_us is not None and report.profiler_overhead_us >= 0
    # gpu-idle read the CPU's 53 µs window as "idle 53 µs per step (100 %)" beside it
    assert [f.rule for f in report.findings if f.rule == "gpu-idle"] == []
    assert contradictions(report) == []


def test_compute_bound_threshold_edge(kineto: Any, tmp_path: Path) -> None:
    at = COMPUTE_BOUND_BUSY * 1000
    assert run(busy(kineto(), at), tmp_path).verdict.id == "compute-bound"
    assert run(busy(kineto(), at - 1), tmp_path).verdict.id == "overhead-bound"


def test_overhead_bound_from_the_profile(kineto: Any, tmp_path: Path) -> None:
    v = run(busy(kineto(), 100), tmp_path).verdict
    assert v.id == "overhead-bound"
    assert v.headline == "overhead-bound: 1.0 ms CPU per step vs 100 µs GPU"
    assert v.basis == "profile"


def test_overhead_bound_cuda_uses_unprofiled_cpu_time(kineto: Any, tmp_path: Path) -> None:
    m = Measurements(
        cold_us=90_000.0,
        call_us=[2200.0, 2300.0, 2400.0],
        dispatch_floor_us=5.0,
        device_kind="cuda",
        device_name="A100",
    )
    report = run(busy(kineto(), 23), tmp_path, m)
    v = report.verdict
    assert v.headline == "overhead-bound: 2.3 ms CPU vs 23 µs GPU"
    assert v.cpu_us == pytest.approx(2300.0) and v.device_us == pytest.approx(23)
    assert report.timing is not None and report.timing.median_us == 2300.0
    # The profiled steps (1 ms) ran faster than every unprofiled call: the passes disagree,
    # so no (negative) profiler overhead, and the verdict says it is unstable and why.
    assert report.profiler_overhead_us is None
    assert not v.stable
    assert v.unstable_reason.startswith("unstable: the profiled steps ran faster")
    assert v.unstable_reason.endswith("rerun, or raise --timing-budget")
    assert to_builtins(report)["verdict"]["stable"] is False


def test_device_time_counts_work_launched_in_the_step(kineto: Any, tmp_path: Path) -> None:
    # The CPU runs ahead: each 50 µs step launches 3 ms of GPU work that runs after it.
    b = kineto()
    for i in range(3):
        t = i * 50
        b.step(i + 1, t, 50)
        b.launch(t + 5, 5, "ampere_sgemm_128x64_nn", 20 + i * 3000, 3000)
    report = run(b, tmp_path)
    assert [s.device_time_us for s in report.steps] == [3000, 3000, 3000]
    assert report.verdict.id == "compute-bound"
    assert report.verdict.device_us == pytest.approx(3000)


def sync_heavy(b: KinetoBuilder, sync_us: float) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.launch(1, 5, "void k()", 10, 40)
    b.annotation("torchscope:L14", 90, 800)
    b.op("aten::item", 95, 790)
    b.runtime("cudaStreamSynchronize", 100, sync_us)
    return b


def test_sync_bound_names_call_and_line(kineto: Any, tmp_path: Path) -> None:
    v = run(sync_heavy(kineto(), 600), tmp_path).verdict
    assert v.id == "sync-bound"
    assert v.headline == "sync-bound: 600 µs of 1.0 ms waiting in cudaStreamSynchronize (line 14)"


def test_sync_bound_threshold_edge(kineto: Any, tmp_path: Path) -> None:
    assert run(sync_heavy(kineto(), SYNC_BOUND_SHARE * 1000), tmp_path).verdict.id == "sync-bound"
    assert (
        run(sync_heavy(kineto(), SYNC_BOUND_SHARE * 1000 - 1), tmp_path).verdict.id
        == "overhead-bound"
    )


def test_copy_bound(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.op("aten::to", 1, 20)
    b.copy(2, 10, "Memcpy HtoD (Pageable -> Device)", 20, 500, 64 * 2**20)
    b.launch(30, 5, "void k()", 600, 100)
    v = run(b, tmp_path).verdict
    assert v.id == "copy-bound"
    assert v.headline == "copy-bound: 83 % of GPU time in Memcpy HtoD (Pageable -> Device)"


def test_input_bound(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 500)
    b.launch(505, 5, "void k()", 510, 390)
    v = run(b, tmp_path).verdict
    assert v.id == "input-bound"
    assert v.headline.startswith(
        "input-bound: GPU idle 50 % of each step while waiting on DataLoader (num_workers=0)"
    )


def test_no_kernels_recorded(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.op("aten::mm", 1, 100)
    b.runtime("cudaLaunchKernel", 10, 5)
    v = run(b, tmp_path).verdict
    assert v.id == "no-kernels" and v.headline.startswith(
        "no kernels were recorded: 1 kernel launches"
    )


def test_no_activity_in_steps(kineto: Any, tmp_path: Path) -> None:
    b = kineto(gpu=False)
    b.step(1, 0, 100)
    b.step(2, 100, 100)
    v = run(b, tmp_path, Measurements(1.0, [1.0], 1.0)).verdict
    assert v.id == "no-activity"


def test_events_without_recognised_kinds_are_an_error(kineto: Any, tmp_path: Path) -> None:
    b = kineto(gpu=False)
    with pytest.raises(TraceError):
        run(b, tmp_path)


def test_steps_fall_back_to_optimizer_iterations(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    for i in range(3):
        t = i * 1000
        b.op("aten::mm", t + 1, 100)
        b.launch(t + 2, 5, "void k()", t + 10, 300)
        b.annotation("Optimizer.step#SGD.step", t + 800, 100)
    report = run(b, tmp_path)
    assert report.step_source == "Optimizer.step"
    assert [round(s.wall_us) for s in report.steps] == [899, 1000, 1000]


def test_steps_fall_back_to_the_whole_trace(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.op("aten::mm", 0, 100)
    b.launch(2, 5, "void k()", 10, 300)
    report = run(b, tmp_path)
    assert report.step_source == "trace" and len(report.steps) == 1
    assert report.steps[0].wall_us == pytest.approx(310)


def test_overlapping_streams_count_once(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(1, 5, "void a()", 100, 400, stream=7)
    b.launch(2, 5, "void b()", 300, 400, stream=20)  # overlaps a() for 200 µs
    b.copy(3, 5, "Memcpy HtoD (Pinned -> Device)", 650, 100, 1024)  # overlaps b() for 50 µs
    step = run(b, tmp_path).steps[0]
    assert step.device_busy_us == pytest.approx(650)  # 100..750
    assert step.kernel_us + step.memcpy_us == pytest.approx(900)


def test_kernel_table_min_median_max_and_launch_delay(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    for i, d in enumerate([100, 300, 200]):
        t = i * 1000
        b.step(i + 1, t, 1000)
        b.launch(t + 10, 5, "void k()", t + 40, d)  # starts 30 µs after its launch call
    report = run(b, tmp_path)
    (k,) = report.top_kernels
    assert (k.name, k.calls, k.min_us, k.median_us, k.max_us) == ("void k()", 3, 100, 200, 300)
    assert k.launch_delay_us == pytest.approx(30)
    assert [s.launch_delay_us for s in report.steps] == [pytest.approx(30)] * 3


def test_a_cpu_function_profiled_on_a_gpu_machine_ran_on_the_cpu(
    kineto: Any, tmp_path: Path
) -> None:
    # As on an H200 for fn at 8x8 on CPU tensors: the trace lists the GPU and holds only the
    # profiler's closing cudaDeviceSynchronize; the report said device 'cuda' 'NVIDIA H200'.
    b = kineto()
    for i in range(3):
        b.step(i + 1, i * 100, 50)
        b.op("aten::mm", i * 100 + 5, 20)
    b.runtime("cudaDeviceSynchronize", 400, 13)
    gpu = Peaks({"float32": 60_000.0}, 4_000.0, "measured", "NVIDIA H200")
    m = Measurements(
        5.0, [5.2, 5.3, 5.4], 1.4, device_kind="cuda", device_name="NVIDIA H200", peaks=gpu
    )
    report = run(b, tmp_path, m)
    assert report.peaks is None
    assert report.device.kind == "cpu", report.device
    assert "H200" not in report.device.name
    # Its mm is not judged by a GPU's peak (the job calibrated the GPU) nor named after it.
    v = report.verdict
    assert "(CPU)" in v.headline and "A100" not in v.headline and "H200" not in v.headline, v
    assert "ran on the CPU" in report.rules_skipped.get("low-efficiency-gemm", "")
