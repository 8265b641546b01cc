"""Every rule on hand-built minimal traces: one that fires, one that does not.

The traces are written as Kineto JSON (see ``KinetoBuilder`` in conftest.py) and analysed
through the public ``analyze_trace``, so parsing, linking and segmentation are exercised too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import ALL_RULES
from torchscope.analysis.multi.compile_rules import COMPARE_RULES
from torchscope.analysis.verdict.findings import RuleBase

from .conftest import KinetoBuilder
from .rule_helpers import only, rules, run


def test_every_rule_has_id_title_docs_and_source() -> None:
    every: list[RuleBase] = [*ALL_RULES, *COMPARE_RULES]
    ids = [r.id for r in every]
    assert len(ids) == len(set(ids)), "rule ids must be unique across trace and compare rules"
    for r in every:
        assert r.title and r.source
        assert r.docs_anchor == f"docs/findings.md#{r.id}"
        assert r.severity in ("error", "warning", "information", "hint")
    docs = (Path(__file__).resolve().parents[2] / "docs" / "findings.md").read_text()
    for r in every:
        assert f"### {r.id}\n" in docs, f"docs/findings.md lacks a section for {r.id}"


# -- sync -------------------------------------------------------------------------------


def sync_trace(b: KinetoBuilder, sync_us: float) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.launch(10, 5, "void k()", 20, 100)
    b.op("aten::item", 100, 800)
    b.op("aten::_local_scalar_dense", 105, 790)
    b.copy(110, 10, "Memcpy DtoH (Device -> Pinned)", 120, 2, 4)
    b.runtime("cudaStreamSynchronize", 130, sync_us)
    return b


def test_sync_fires_with_cost_and_item_hint(kineto: Any, tmp_path: Path) -> None:
    f = only(run(sync_trace(kineto(), 650), tmp_path), "sync")
    assert f.cost_us == pytest.approx(650)
    assert f.severity == "warning"
    assert "cudaStreamSynchronize inside aten::item" in f.message and ".item()" in f.message


def test_sync_ignores_tiny_waits(kineto: Any, tmp_path: Path) -> None:
    assert "sync" not in rules(run(sync_trace(kineto(), 5), tmp_path))


# -- pageable-copy (hidden synchronisation) ----------------------------------------------


def readback(b: KinetoBuilder, copy: str) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.launch(5, 5, "void long_kernel()", 20, 840)
    b.op("aten::to", 100, 800)
    b.op("aten::copy_", 105, 790)
    b.copy(110, 770, copy, 870, 2, 704)
    return b


def test_pageable_dtoh_is_a_hidden_sync(kineto: Any, tmp_path: Path) -> None:
    report = run(readback(kineto(), "Memcpy DtoH (Device -> Pageable)"), tmp_path)
    f = only(report, "pageable-copy")
    assert f.message.startswith("hidden synchronisation")
    assert "704 B" in f.message and "770 µs" in f.message
    assert f.cost_us == pytest.approx(770)
    assert report.steps[0].syncs == 1 and report.steps[0].sync_us == pytest.approx(770)


def test_pinned_copy_is_not_pageable(kineto: Any, tmp_path: Path) -> None:
    report = run(readback(kineto(), "Memcpy DtoH (Device -> Pinned)"), tmp_path)
    assert "pageable-copy" not in rules(report)
    assert report.steps[0].syncs == 0


# -- hidden-copy -------------------------------------------------------------------------


def addmm(b: KinetoBuilder, top: str) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.op(top, 100, 300)
    b.copy(110, 20, "Memcpy DtoD (Device -> Device)", 150, 50, 32 * 2**20)
    b.launch(140, 5, "ampere_sgemm_128x64_nn", 200, 300)
    return b


def test_hidden_copy_under_addmm(kineto: Any, tmp_path: Path) -> None:
    f = only(run(addmm(kineto(), "aten::addmm"), tmp_path), "hidden-copy")
    assert "aten::addmm" in f.message and "DtoD" in f.message and "32.0 MiB" in f.message
    assert f.cost_us == pytest.approx(50)


def test_explicit_copy_is_not_hidden(kineto: Any, tmp_path: Path) -> None:
    assert "hidden-copy" not in rules(run(addmm(kineto(), "aten::copy_"), tmp_path))


# -- heavy-kernel ------------------------------------------------------------------------


def test_heavy_kernel_after_occupancy_query(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.op("aten::mm", 90, 100)
    b.runtime("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 100, 2)
    b.launch(105, 5, "ampere_sgemm_128x64_nn", 120, 400)
    f = only(run(b, tmp_path), "heavy-kernel")
    assert f.severity == "hint" and f.cost_us == 0
    assert "ampere_sgemm_128x64_nn" in f.message


def test_no_heavy_kernel_without_occupancy_query(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(105, 5, "ampere_sgemm_128x64_nn", 120, 400)
    assert "heavy-kernel" not in rules(run(b, tmp_path))


# -- profiler-flush ----------------------------------------------------------------------


def test_final_device_sync_is_the_profiler_flush(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(10, 5, "void k()", 20, 100)
    b.runtime("cudaDeviceSynchronize", 1100, 5000)
    report = run(b, tmp_path)
    f = only(report, "profiler-flush")
    assert f.cost_us == 0 and f.severity == "hint"
    assert "sync" not in rules(report)
    assert "cudaDeviceSynchronize" not in report.verdict.headline
    assert (
        report.findings[-1].rule == "profiler-flush" or report.findings[0].rule != "profiler-flush"
    )


def test_device_sync_inside_the_code_is_not_a_flush(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.op("aten::foo", 100, 700)
    b.runtime("cudaDeviceSynchronize", 110, 600)
    b.op("aten::bar", 850, 20)
    report = run(b, tmp_path)
    assert "profiler-flush" not in rules(report)
    assert only(report, "sync").cost_us == pytest.approx(600)


# -- profiler-buffer ---------------------------------------------------------------------


def test_activity_buffer_request_is_an_artefact(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(10, 5, "void k()", 20, 100)
    b.overhead("Activity Buffer Request", 500, 50)
    f = only(run(b, tmp_path), "profiler-buffer")
    assert f.cost_us == 0 and "Activity Buffer Request" in f.message


def test_no_buffer_finding_without_overhead_events(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 1000)
    b.launch(10, 5, "void k()", 20, 100)
    assert "profiler-buffer" not in rules(run(b, tmp_path))


# -- lazy-init ---------------------------------------------------------------------------


def lazy(b: KinetoBuilder, free_us: float) -> KinetoBuilder:
    b.runtime("cudaFree", -3_000_000, free_us)
    b.step(1, 0, 1000)
    b.launch(10, 5, "void k()", 20, 900)
    return b


def test_lazy_init_is_labelled_not_blamed(kineto: Any, tmp_path: Path) -> None:
    report = run(lazy(kineto(), 2_000_000), tmp_path)
    f = only(report, "lazy-init")
    assert f.message.startswith("initialisation") and "cudaFree 2.00 s" in f.message
    assert f.cost_us == 0
    assert report.verdict.id == "compute-bound"


def test_short_cuda_free_is_not_init(kineto: Any, tmp_path: Path) -> None:
    assert "lazy-init" not in rules(run(lazy(kineto(), 50), tmp_path))


# -- dispatch-gap ------------------------------------------------------------------------


def gap_trace(b: KinetoBuilder, first_op: float) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.annotation("torchscope:L5", 0, 900)
    b.op("aten::add", first_op, 100)
    return b


def test_dispatch_gap_before_first_op_of_a_line(kineto: Any, tmp_path: Path) -> None:
    report = run(gap_trace(kineto(gpu=False), 400), tmp_path)
    lines = {f.line: f for f in report.findings if f.rule == "dispatch-gap"}
    assert 5 in lines and "400 µs" in lines[5].message
    # The marker is the worker's record_function name; the reader sees the line.
    assert lines[5].message.startswith("line 5 runs 400 µs"), lines[5].message
    assert "torchscope:L" not in lines[5].message


def test_no_dispatch_gap_when_ops_start_at_once(kineto: Any, tmp_path: Path) -> None:
    assert "dispatch-gap" not in rules(run(gap_trace(kineto(gpu=False), 10), tmp_path))


# -- kernel-variance ---------------------------------------------------------------------


def steps_with_kernel(
    b: KinetoBuilder, durations: list[float], name: str = "void k_var()"
) -> KinetoBuilder:
    for i, d in enumerate(durations):
        t = i * 1000
        b.step(i + 1, t, 1000)
        b.launch(t + 10, 5, name, t + 20, d)
    return b


def test_kernel_variance_across_steps(kineto: Any, tmp_path: Path) -> None:
    f = only(run(steps_with_kernel(kineto(), [200, 200, 600]), tmp_path), "kernel-variance")
    assert f.details["min_us"] == 200 and f.details["max_us"] == 600


def test_steady_kernel_has_no_variance(kineto: Any, tmp_path: Path) -> None:
    assert "kernel-variance" not in rules(
        run(steps_with_kernel(kineto(), [200, 210, 205]), tmp_path)
    )


# -- hot-op ------------------------------------------------------------------------------


def two_ops(b: KinetoBuilder, mm_us: float, add_us: float) -> KinetoBuilder:
    b.step(1, 0, 2000)
    b.op("aten::mm", 10, 20)
    b.launch(12, 5, "ampere_sgemm_128x64_nn", 40, mm_us)
    b.op("aten::add", 40, 20)
    b.launch(42, 5, "void add_kernel()", 40 + mm_us + 5, add_us)
    return b


def test_hot_op_dominates_device_time(kineto: Any, tmp_path: Path) -> None:
    f = only(run(two_ops(kineto(), 900, 100), tmp_path), "hot-op")
    assert f.message.startswith("aten::mm takes 90 %")


def test_balanced_ops_are_not_hot(kineto: Any, tmp_path: Path) -> None:
    assert "hot-op" not in rules(run(two_ops(kineto(), 500, 500), tmp_path))


# -- many-calls --------------------------------------------------------------------------


def loop(b: KinetoBuilder, calls: int) -> KinetoBuilder:
    b.step(1, 0, 1000)
    for i in range(calls):
        b.op("aten::add_", 1 + i * 3, 2.5)
    return b


def test_many_calls_per_step(kineto: Any, tmp_path: Path) -> None:
    f = only(run(loop(kineto(gpu=False), 300), tmp_path), "many-calls")
    assert "aten::add_ is called 300 times per step" in f.message
    assert f.cost_us == pytest.approx(750)


def test_few_calls_are_fine(kineto: Any, tmp_path: Path) -> None:
    assert "many-calls" not in rules(run(loop(kineto(gpu=False), 100), tmp_path))


# -- compile-tax -------------------------------------------------------------------------


def compiled(b: KinetoBuilder, lookup: float, region: float) -> KinetoBuilder:
    b.step(1, 0, 1000)
    b.op("TorchDynamo Cache Lookup", 10, lookup)
    b.op("Torch-Compiled Region: 0/0", 70, region)
    b.op("triton_poi_fused_add_0", 71, 2)
    b.launch(72, 1, "triton_poi_fused_add_0", 80, 5, call="cuLaunchKernel")
    b.annotation("## Call CompiledFxGraph fabc123 ##", 71, 3)
    return b


def test_compile_wrapper_cost(kineto: Any, tmp_path: Path) -> None:
    f = only(run(compiled(kineto(), 50, 400), tmp_path), "compile-tax")
    # The launch sits inside the triton op, so only the op is subtracted from the region.
    assert f.cost_us == pytest.approx(50 + 400 - 2)
    assert "fabc123" in f.message


def test_cheap_compile_wrapper_is_fine(kineto: Any, tmp_path: Path) -> None:
    assert "compile-tax" not in rules(run(compiled(kineto(), 2, 5), tmp_path))


# -- small-kernels -----------------------------------------------------------------------


def launches(b: KinetoBuilder, kernel_us: float) -> KinetoBuilder:
    b.step(1, 0, 2000)
    for i in range(20):
        b.launch(10 + i * 60, 10, "void tiny()", 25 + i * 60, kernel_us)
    return b


def test_kernels_shorter_than_their_launch(kineto: Any, tmp_path: Path) -> None:
    f = only(run(launches(kineto(), 2), tmp_path), "small-kernels")
    assert f.cost_us == pytest.approx(20 * 10)


def test_kernels_longer_than_launch_are_fine(kineto: Any, tmp_path: Path) -> None:
    assert "small-kernels" not in rules(run(launches(kineto(), 50), tmp_path))


# -- launch-delay ------------------------------------------------------------------------


def test_launch_delay_on_idle_gpu(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 5000)
    for t in (100, 1000, 2000):
        b.launch(t, 5, "void late()", t + 300, 10)
    f = only(run(b, tmp_path), "launch-delay")
    assert f.cost_us == pytest.approx(900)


def test_queueing_behind_busy_gpu_is_not_launch_delay(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 5000)
    b.launch(40, 5, "void long_one()", 50, 1000)
    b.launch(100, 5, "void queued()", 1050, 10)
    assert "launch-delay" not in rules(run(b, tmp_path))


# -- gpu-idle and dataloader -------------------------------------------------------------


def idle(b: KinetoBuilder, loader: tuple[float, float] | None) -> KinetoBuilder:
    b.step(1, 0, 10_000)
    b.launch(0, 5, "void a()", 5, 995)
    if loader:
        b.annotation(
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", loader[0], loader[1]
        )
    b.launch(8990, 5, "void b()", 9000, 1000)
    return b


def test_gpu_idle_gap(kineto: Any, tmp_path: Path) -> None:
    report = run(idle(kineto(), None), tmp_path)
    f = only(report, "gpu-idle")
    assert f.cost_us == pytest.approx(8000)
    assert "dataloader" not in rules(report)


def test_gap_under_dataloader_is_the_dataloaders(kineto: Any, tmp_path: Path) -> None:
    report = run(idle(kineto(), (1000, 8000)), tmp_path)
    assert "gpu-idle" not in rules(report)
    f = only(report, "dataloader")
    assert "num_workers=0" in f.message
    assert f.cost_us == pytest.approx(8000)
    assert report.verdict.id == "input-bound"


def test_short_dataloader_is_fine(kineto: Any, tmp_path: Path) -> None:
    b = kineto()
    b.step(1, 0, 10_000)
    b.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 100)
    b.launch(100, 5, "void a()", 110, 9800)
    assert "dataloader" not in rules(run(b, tmp_path))


def test_marker_names_read_as_lines() -> None:
    """What ``finding`` does to every rule's message: no worker-internal marker names."""
    from torchscope.analysis.index.source import lines_for_markers

    assert lines_for_markers("torchscope:L182 runs 65 µs") == "line 182 runs 65 µs"
    assert lines_for_markers("in torchscope:L12:model.py, then") == "in line 12 of model.py, then"
    assert lines_for_markers("ProfilerStep#3 runs 1 ms") == "ProfilerStep#3 runs 1 ms"
