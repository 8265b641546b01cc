"""Every rule on hand-built minimal traces, continued: GEMM dtypes, training loops,
communication, the CPU-side rules and memory (``test_analysis_rules.py`` has the rest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import Measurements, Report
from torchscope.protocol import to_builtins

from .conftest import CPU_PID, CPU_TID, V100, KinetoBuilder
from .rule_helpers import NCCL, only, rules, run

# -- fp32-matmul and unaligned-fp16 -------------------------------------------------------


def matmul(b: KinetoBuilder, types: list[str], dims: list[list[int]], kernel: str) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.op("aten::mm", 10, 50, **{"Input type": types, "Input Dims": dims})
    b.launch(20, 5, kernel, 30, 500)
    return b


SQUARE = [[1024, 1024], [1024, 1024]]


def test_fp32_matmul_without_tf32_on_ampere(kineto: Any, tmp_path: Path) -> None:
    f = only(
        run(matmul(kineto(), ["float", "float"], SQUARE, "ampere_sgemm_128x64_nn"), tmp_path),
        "fp32-matmul",
    )
    assert f.cost_us == pytest.approx(500) and "allow_tf32" in f.message


def test_tf32_kernel_is_fine(kineto: Any, tmp_path: Path) -> None:
    kernel = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"
    assert "fp32-matmul" not in rules(
        run(matmul(kineto(), ["float", "float"], SQUARE, kernel), tmp_path)
    )


def test_fp32_matmul_skipped_before_ampere(kineto: Any, tmp_path: Path) -> None:
    report = run(
        matmul(kineto(V100), ["float", "float"], SQUARE, "volta_sgemm_128x64_nn"), tmp_path
    )
    assert report.rules_skipped["fp32-matmul"] == "the GPU (sm_70) has no TF32 tensor cores"
    assert to_builtins(report)["rules_skipped"]["fp32-matmul"].startswith("the GPU")
    assert "fp32-matmul" not in rules(
        run(matmul(kineto(V100), ["float", "float"], SQUARE, "volta_sgemm_128x64_nn"), tmp_path)
    )


def test_unaligned_half_matmul(kineto: Any, tmp_path: Path) -> None:
    report = run(
        matmul(kineto(), ["c10::Half", "c10::Half"], [[100, 64], [64, 30]], "ampere_h1688gemm"),
        tmp_path,
    )
    assert "multiple of 8" in only(report, "unaligned-fp16").message


def test_aligned_half_matmul_is_fine(kineto: Any, tmp_path: Path) -> None:
    report = run(
        matmul(kineto(), ["c10::Half", "c10::Half"], [[128, 64], [64, 32]], "ampere_h1688gemm"),
        tmp_path,
    )
    assert "unaligned-fp16" not in rules(report)


# -- zero-grad ---------------------------------------------------------------------------


def zero_grad(b: KinetoBuilder, zero: bool) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.annotation("Optimizer.zero_grad#SGD.zero_grad", 100, 200)
    if zero:
        for t in (110, 160):
            b.op("aten::zero_", t, 30)
            b.op("aten::fill_", t + 2, 20)
            b.launch(t + 5, 5, "void fill_kernel()", t + 20, 3)
    b.launch(400, 5, "void k()", 410, 500)
    return b


def test_zero_grad_without_set_to_none(kineto: Any, tmp_path: Path) -> None:
    f = only(run(zero_grad(kineto(), True), tmp_path), "zero-grad")
    assert "set_to_none=True" in f.message and f.cost_us == pytest.approx(60)


def test_zero_grad_set_to_none_is_fine(kineto: Any, tmp_path: Path) -> None:
    assert "zero-grad" not in rules(run(zero_grad(kineto(), False), tmp_path))


# -- low-utilization and comm-heavy -------------------------------------------------------


def test_low_utilization(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(10, 5, "void k()", 20, 200)
    assert "busy 20 %" in only(run(b, tmp_path), "low-utilization").message


def test_busy_gpu_is_not_low_utilization(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(0, 5, "void k()", 10, 900)
    assert "low-utilization" not in rules(run(b, tmp_path))


def comm(b: KinetoBuilder, nccl_us: float) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.launch(10, 5, "void compute()", 20, 400)
    b.launch(30, 5, NCCL, 500, nccl_us, stream=20)
    return b


def test_comm_heavy_share(kineto: Any, tmp_path: Path) -> None:
    f = only(run(comm(kineto(), 300), tmp_path), "comm-heavy")
    assert f.details["comm_share"] == pytest.approx(0.3)
    assert f.details["exposed_us"] == pytest.approx(300)
    assert f.severity == "warning"


def test_comm_heavy_counts_each_steps_own_exposed_part(kineto: Any, tmp_path: Path) -> None:
    # Three 1 ms steps: 400 µs of NCCL hidden under compute, 400 µs exposed, none. Medians
    # of different steps said 400 µs of communication with 0 µs exposed; the steps' totals
    # are 800 µs of communication (27 %), 400 µs of it exposed (13 %: 0 to 40 % per step).
    b = kineto()
    for k, (compute_us, nccl_at) in enumerate([(900, 100), (100, 500), (500, None)]):
        ts = 10_000.0 * k
        b.step(k + 1, ts, 1000)
        b.launch(ts + 10, 5, "void compute()", ts + 20, compute_us)
        if nccl_at is not None:
            b.launch(ts + 30, 5, NCCL, ts + nccl_at, 400, stream=20)
    f = only(run(b, tmp_path), "comm-heavy")
    assert f.details["comm_share"] == pytest.approx(800 / 3000)
    assert f.details["exposed_share"] == pytest.approx(400 / 3000)
    assert f.details["exposed_us"] == pytest.approx(400 / 3)
    assert (f.details["exposed_share_min"], f.details["exposed_share_max"]) == (0.0, 0.4)
    assert f.severity == "warning"
    assert "(13 % of the steps, 0 %–40 % per step)" in f.message


def test_little_comm_is_fine(kineto: Any, tmp_path: Path) -> None:
    assert "comm-heavy" not in rules(run(comm(kineto(), 50), tmp_path))


# -- cold-start --------------------------------------------------------------------------


def cpu_step(b: KinetoBuilder) -> KinetoBuilder:
    b.step(1, 0, 100)
    b.op("aten::add", 10, 5)
    return b


def test_cold_start_fires_on_a_slow_first_call(kineto: Any, tmp_path: Path) -> None:
    f = only(
        run(cpu_step(kineto(gpu=False)), tmp_path, Measurements(50_000.0, [10.0, 10.0], 1.0)),
        "cold-start",
    )
    assert f.cost_us == pytest.approx(49_990)


def test_cold_start_quiet_when_first_call_is_normal(kineto: Any, tmp_path: Path) -> None:
    assert "cold-start" not in rules(
        run(cpu_step(kineto(gpu=False)), tmp_path, Measurements(12.0, [10.0, 10.0], 1.0))
    )


def test_shape_rules_say_when_shapes_were_not_recorded(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.op("aten::mm", 10, 50)  # no Input type / Input Dims: record_shapes was off
    b.launch(20, 5, "ampere_sgemm_128x64_nn", 30, 500)
    report = run(b, tmp_path)
    assert "record_shapes=True" in report.rules_skipped["fp32-matmul"]
    assert "record_shapes=True" in report.rules_skipped["unaligned-fp16"]


# -- low-efficiency-gemm, memory-bound-chain (need peaks: a calibrated CPU) ------------------


def _calibrated(call_us: float) -> Measurements:
    from torchscope.analysis.results import Peaks

    peaks = Peaks({"float32": 200.0}, 20.0, "measured", "cpu:2t")
    return Measurements(cold_us=call_us, call_us=[call_us] * 5, dispatch_floor_us=2.0, peaks=peaks)


def one_gemm(b: KinetoBuilder, a: list[int], w: list[int], dur: float) -> KinetoBuilder:
    b.step(1, 0, dur + 100)
    b.op("aten::mm", 50, dur, **{"Input Dims": [a, w], "Input type": ["float", "float"]})
    return b


def test_thin_gemm_far_below_the_peak(kineto: Any, tmp_path: Path) -> None:
    # 2·4096·4096·8 = 268 MFLOP in 5 ms: 54 GFLOP/s, 27 % of the 200 GFLOP/s peak.
    b = one_gemm(kineto(gpu=False), [4096, 8], [8, 4096], 5000)
    f = only(run(b, tmp_path, _calibrated(5100)), "low-efficiency-gemm")
    assert f.details["efficiency"] == pytest.approx(268435456 / 5000 / 1e3 / 200)
    assert "thin matrix" in f.message and "measured peak" in f.message


def test_square_gemm_near_the_peak_is_fine(kineto: Any, tmp_path: Path) -> None:
    # 2·1024³ = 2.1 GFLOP in 15 ms: 143 GFLOP/s, 72 % of the peak.
    b = one_gemm(kineto(gpu=False), [1024, 1024], [1024, 1024], 15000)
    report = run(b, tmp_path, _calibrated(15100))
    assert "low-efficiency-gemm" not in rules(report)
    # The verdict holds the whole unprofiled call (15.1 ms) to the peak, not the op alone.
    assert report.verdict.efficiency == pytest.approx(2 * 1024**3 / 15100 / 1e3 / 200)
    assert (report.verdict.id, report.verdict.cause) == ("compute-bound", "compute")


def elementwise(
    b: KinetoBuilder, n: int, shape: tuple[int, int] = (4096, 4096), dur: float = 9_990
) -> KinetoBuilder:
    """``n`` in-place ``mul_`` on one float tensor, by default 4096×4096 in 10 ms each: 134 MB
    moved each, 13.4 GB/s, 67 % of the 20 GB/s bandwidth."""
    b.step(1, 0, n * (dur + 10) + 100)
    for i in range(n):
        dims = {"Input Dims": [list(shape), []], "Input type": ["float", "Scalar"]}
        b.op("aten::mul_", 50 + i * (dur + 10), dur, **dims)
    return b


def test_memory_bound_chain_of_three(kineto: Any, tmp_path: Path) -> None:
    f = only(run(elementwise(kineto(gpu=False), 3), tmp_path, _calibrated(30_100)), "memory-bound-chain")
    assert f.details["ops"] == 3 and "torch.compile" in f.message
    assert f.details["gbps"] == pytest.approx(2 * 4096 * 4096 * 4 / 9_990 / 1e3)


def test_two_elementwise_ops_are_no_chain(kineto: Any, tmp_path: Path) -> None:
    report = run(elementwise(kineto(gpu=False), 2), tmp_path, _calibrated(20_100))
    assert "memory-bound-chain" not in rules(report)


def test_a_chain_slowed_by_another_process_is_still_a_chain(kineto: Any, tmp_path: Path) -> None:
    # The same ops 10x slower (another process held the core): 1.3 GB/s, 7 % of the bandwidth.
    # Their work makes them memory-bound (0.06 FLOP/B, under the 10 FLOP/B ridge point), not
    # their speed, which the message reports.
    b = elementwise(kineto(gpu=False), 3, dur=99_990)
    f = only(run(b, tmp_path, _calibrated(300_100)), "memory-bound-chain")
    assert f.details["ops"] == 3 and "7 % of measured bandwidth" in f.message
    assert f.details["gbps"] == pytest.approx(2 * 4096 * 4096 * 4 / 99_990 / 1e3)


def test_elementwise_ops_too_small_to_be_bandwidth_bound_are_no_chain(
    kineto: Any, tmp_path: Path
) -> None:
    # 20 mul_ on 8×8 (512 bytes: 0.03 µs at 20 GB/s, under the 2 µs dispatch floor), 5 µs each:
    # dispatch sets their time, not bytes (100 µs per step, over the 50 µs minimum).
    b = elementwise(kineto(gpu=False), 20, shape=(8, 8), dur=5)
    report = run(b, tmp_path, _calibrated(120))
    assert "memory-bound-chain" not in rules(report)


# -- allocation-churn (page faults from the timing pass) -----------------------------------


def faulting(faults: float, fault_us: float, call_us: float = 10.0) -> Measurements:
    return Measurements(
        12.0, [call_us, call_us], 1.0, page_faults=[faults, faults], page_fault_us=fault_us
    )


def test_allocation_churn_fires_on_page_faults_and_caps_their_share(
    kineto: Any, tmp_path: Path
) -> None:
    # 400 faults × 0.1 µs = 40 µs of fault work on a 10 µs call: several threads faulted at
    # once. The share of the call is capped at 100 %; the fault work is kept as measured.
    report = run(cpu_step(kineto(gpu=False)), tmp_path, faulting(400, 0.1))
    f = only(report, "allocation-churn")
    assert f.details["page_fault_share"] == 1.0
    assert f.details["page_fault_us"] == pytest.approx(40.0)
    assert report.memory is not None and report.memory.page_fault_share == 1.0


def test_allocation_churn_quiet_below_the_share_or_the_fault_floor(
    kineto: Any, tmp_path: Path
) -> None:
    few = run(cpu_step(kineto(gpu=False)), tmp_path, faulting(10, 1.0))  # 10 faults: noise
    cheap = run(cpu_step(kineto(gpu=False)), tmp_path, faulting(100, 0.001))  # 1 % of the call
    assert "allocation-churn" not in rules(few) and "allocation-churn" not in rules(cheap)
    assert cheap.memory is not None and cheap.memory.page_fault_share == pytest.approx(0.01)


# -- memory rules over [memory] events (profile_memory=True) -------------------------------


def memory_event(b: KinetoBuilder, ts: float, nbytes: int, addr: int, device: int) -> None:
    """One ``[memory]`` instant event as Kineto writes it (device 0: CPU, 1: CUDA)."""
    args = {"Addr": addr, "Bytes": nbytes, "Device Type": device, "Device Id": device - 1}
    b.events.append(
        {"ph": "i", "s": "t", "name": "[memory]", "pid": CPU_PID, "tid": CPU_TID, "ts": ts,
         "args": args}
    )


def loop_steps(b: KinetoBuilder, *, alloc_in_loop: bool) -> KinetoBuilder:
    """Two calls; line 5 runs three times per call (a loop body) and, with ``alloc_in_loop``,
    creates a 4 KiB CUDA tensor each time (``aten::to``); line 7 allocates 1 MiB and keeps it."""
    for step, t0 in ((1, 0.0), (2, 1000.0)):
        b.step(step, t0, 900)
        for i in range(3):
            ts = t0 + 10 + 100 * i
            b.annotation("torchscope:L5", ts, 50)
            b.op("aten::to", ts + 5, 20)
            if alloc_in_loop:
                memory_event(b, ts + 10, 4096, 0xA000 + 64 * i + step, 1)
                memory_event(b, ts + 30, -4096, 0xA000 + 64 * i + step, 1)
        b.annotation("torchscope:L7", t0 + 400, 50)
        b.op("aten::empty", t0 + 405, 20)
        memory_event(b, t0 + 410, 1 << 20, 0xB000 + step, 1)
    return b


def test_host_to_device_in_loop_fires_on_a_loop_body_that_allocates(
    kineto: Any, tmp_path: Path
) -> None:
    report = run(loop_steps(kineto(), alloc_in_loop=True), tmp_path)
    f = only(report, "host-to-device-in-loop")
    assert f.line == 5 and f.details["allocs_per_call"] == 3
    quiet = run(loop_steps(kineto(), alloc_in_loop=False), tmp_path)
    assert "host-to-device-in-loop" not in rules(quiet)
    # Line 7 keeps 1 MiB in both calls: the leak, and the peak's line.
    assert only(quiet, "leak").line == 7
    assert quiet.memory is not None and quiet.memory.peak_line == 7
    assert quiet.memory.peak_bytes == 1 << 20


def test_peak_near_limit_fires_only_near_the_free_memory(kineto: Any, tmp_path: Path) -> None:
    def with_free(free: int) -> Report:
        m = Measurements(12.0, [10.0, 10.0], 1.0, cuda_memory={"free_bytes_at_start": free})
        return run(loop_steps(kineto(), alloc_in_loop=False), tmp_path, m)

    f = only(with_free(int(1.05 * (1 << 20))), "peak-near-limit")
    assert f.line == 7 and f.details["peak_bytes"] == 1 << 20
    assert "peak-near-limit" not in rules(with_free(4 << 20))
