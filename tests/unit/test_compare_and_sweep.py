"""The compile comparison and the size sweep, without torch: hand-built traces and points.

The GPU case is the guide's 4096×4096 one, in miniature: eager launches a GEMM (``aten::mm``)
and an add kernel; compiled dispatches one ``aten::addmm`` whose ``aten::copy_`` first copies the
bias into the output (a ``Memcpy DtoD``), then runs the same GEMM.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import (
    Device,
    Measurements,
    Report,
    Timing,
    Verdict,
    analyze_trace,
    load_trace,
)
from torchscope.analysis.multi.compare import (
    added_copies,
    compare_runs,
    decide,
    op_changes,
)
from torchscope.analysis.multi.comparison import Comparison, CompileMeta, CopyRow, OpRow
from torchscope.analysis.multi.compile_rules.graph_break import short_reason
from torchscope.analysis.multi.interval import (
    RatioInterval,
    measured_noise,
    point_interval,
    ratio_interval,
)
from torchscope.analysis.multi.inventory import Inventory, inventory
from torchscope.analysis.multi.sweep import (
    Sweep,
    SweepPoint,
    compute_share,
    crossover,
    failed_point,
    point_from_report,
)
from torchscope.protocol import (
    CompareRequest,
    CompareResult,
    FrameDecoder,
    JobOptions,
    ProfileResult,
    encode,
    to_builtins,
)
from torchscope.report.compare import (
    comparison_markdown,
    comparison_page_markdown,
    render_comparison,
)
from torchscope.report.sweep import render_sweep, sweep_markdown
from torchscope.report.sweep_chart import sweep_svg

SVG = "{http://www.w3.org/2000/svg}"
BIAS_BYTES = 4096 * 4096 * 4


def _eager_trace(kineto: Any, path: Path) -> Path:
    k = kineto()
    for step in range(2):
        t = step * 1000.0
        k.step(step + 1, t, 900)
        k.op("aten::matmul", t + 10, 40)
        k.op("aten::mm", t + 12, 36, **{"Input Dims": [[64, 64], [64, 64]]})
        k.launch(t + 15, 5, "ampere_sgemm_128x64_nn", t + 20, 500)
        k.op("aten::add", t + 60, 20)
        k.launch(t + 62, 5, "vectorized_elementwise_kernel", t + 521, 30)
    return k.write(path)


def _compiled_trace(kineto: Any, path: Path) -> Path:
    k = kineto()
    for step in range(2):
        t = step * 1000.0
        k.step(step + 1, t, 900)
        k.op("TorchDynamo Cache Lookup", t + 5, 7)
        k.op("Torch-Compiled Region: 0/0", t + 13, 150)
        k.annotation("## Call CompiledFxGraph fabc123 ##", t + 30, 120)
        k.op("aten::addmm", t + 40, 100)
        k.op("aten::copy_", t + 42, 20)
        k.copy(t + 43, 4, "Memcpy DtoD (Device -> Device)", t + 60, 40, BIAS_BYTES)
        k.launch(t + 70, 5, "ampere_sgemm_128x64_nn", t + 101, 500)
    return k.write(path)


def _measured(call_us: float) -> Measurements:
    return Measurements(
        cold_us=call_us * 10,
        call_us=[call_us] * 9,
        dispatch_floor_us=2.0,
        device_kind="cuda",
        device_name="NVIDIA A100-SXM4-80GB",
    )


@pytest.fixture
def gpu_compare(kineto: Any, tmp_path: Path) -> Comparison:
    eager_path = _eager_trace(kineto, tmp_path / "eager.json")
    compiled_path = _compiled_trace(kineto, tmp_path / "compiled.json")
    meta = CompileMeta(
        compile_s=12.5,
        graph_code={"fabc123": "/tmp/torchinductor_u/ab/cabc.py"},
        eager_us=[600.0] * 6,
        compiled_us=[1140.0, 1200.0, 1260.0, 1200.0, 1230.0, 1170.0],
    )
    return compare_runs(
        analyze_trace(eager_path, _measured(600.0)),
        inventory(load_trace(eager_path)),
        analyze_trace(compiled_path, _measured(1200.0)),
        inventory(load_trace(compiled_path)),
        meta,
        file="model.py",
        line=3,
    )


def test_the_gpu_compare_finds_the_dtod_bias_copy_before_the_gemm(
    gpu_compare: Comparison,
) -> None:
    data = to_builtins(gpu_compare)
    eager, compiled = data["eager"], data["compiled"]
    assert eager["copies"] == []
    [copy] = compiled["copies"]
    assert copy["kind"] == "DtoD" and copy["within"] == "aten::addmm"
    assert copy["bytes"] == BIAS_BYTES and copy["calls"] == 1
    assert eager["launches"] == 2 and compiled["launches"] == 1
    assert (
        data["changes"]["summary"]
        == "aten::matmul + aten::mm + aten::add → aten::addmm + aten::copy_"
    )
    verdict = data["verdict"]
    assert verdict["id"] == "keep-eager"
    assert verdict["headline"] == (
        "torch.compile: 2.0× slower (1.9×–2.1× slower) per call; 600 µs → 1.2 ms, adds a 64.0 MiB "
        "bias copy (DtoD); "
        "keep eager"
    )
    rules = [f["rule"] for f in data["findings"]]
    assert rules == ["compile-slower", "compile-copy"]
    assert gpu_compare.rules_skipped == {
        "recompile": "no recompiles during the measured calls",
        "graph-break": "no graph breaks",
    }
    hidden = data["findings"][1]
    assert hidden["docs"] == "docs/findings.md#compile-copy"
    assert "64.0 MiB DtoD bias copy" in hidden["message"]
    assert hidden["line"] == 3 and hidden["file"] == "model.py"
    assert compiled["graphs"] == [
        {"hash": "fabc123", "code_path": "/tmp/torchinductor_u/ab/cabc.py"}
    ]
    assert compiled["compile_s"] == 12.5
    text = render_comparison(gpu_compare)
    assert "64.0 MiB DtoD in aten::addmm" in text and "CompiledFxGraph fabc123" in text
    markdown = comparison_markdown(gpu_compare)
    assert "| copies per call | none | 1× 64.0 MiB DtoD in `aten::addmm` |" in markdown
    assert "- `compile-copy`: torch.compile adds a 64.0 MiB DtoD bias copy" in markdown
    page = comparison_page_markdown("Model.forward", gpu_compare)
    assert page.startswith("## `Model.forward`: eager vs torch.compile (mode=default)\n\n")
    assert markdown in page
    assert page.endswith(
        "`## Call CompiledFxGraph fabc123 ##` → `/tmp/torchinductor_u/ab/cabc.py`"
    )


def test_a_failed_compile_keeps_the_eager_side(kineto: Any, tmp_path: Path) -> None:
    eager_path = _eager_trace(kineto, tmp_path / "eager.json")
    meta = CompileMeta(
        error="torch.compile failed: InductorError: no compiler", error_kind="compile-failed"
    )
    out = compare_runs(
        analyze_trace(eager_path, _measured(600.0)),
        inventory(load_trace(eager_path)),
        None,
        None,
        meta,
    )
    data = to_builtins(out)
    assert data["compiled"] is None and data["verdict"] is None
    assert data["error"] == {"kind": "compile-failed", "message": meta.error}
    assert data["eager"]["median_us"] == 600.0
    assert out.findings == [] and out.rules_skipped == {}
    assert "torch.compile failed" in render_comparison(out)


@pytest.mark.parametrize(
    ("eager", "compiled", "expected"),
    [
        (9.0, 30.3, "keep-eager"),
        (30.3, 9.0, "compile-wins"),
        (10_000.0, 10_100.0, "no-difference"),
        (10_000.0, 9_600.0, "no-difference"),
        (10_000.0, 10_600.0, "keep-eager"),
    ],
)
def test_the_verdict_band(eager: float, compiled: float, expected: str) -> None:
    assert decide(point_interval(compiled / eager), eager, compiled, [], 3.0).id == expected


def _point(eager: float, compiled: float) -> RatioInterval:
    return point_interval(compiled / eager)


def test_the_headlines_say_which_to_keep_and_by_how_much() -> None:
    bias = CopyRow("cpu", "aten::copy_", "aten::addmm", 1.0, 16384.0, 2.0)
    assert decide(_point(9.0, 30.3), 9.0, 30.3, [bias], 3.0).headline == (
        "torch.compile: 3.4× slower per call; 9.0 µs → 30 µs, adds a 16.0 KiB bias copy; keep eager"
    )
    assert decide(_point(30.0, 10.0), 30.0, 10.0, [], 3.0).headline == (
        "torch.compile: 3.0× faster per call; 30 µs → 10 µs; compile wins (after the 3.00 s compile)"
    )
    assert "1.20× faster" in decide(_point(12.0, 10.0), 12.0, 10.0, [], 3.0).headline
    assert "no difference within ±5 %" in decide(_point(100.0, 101.0), 100.0, 101.0, [], 3.0).headline


def test_a_difference_is_called_only_when_its_interval_clears_the_band() -> None:
    """The paired rounds' interval, not the point ratio, decides (the CI run that called a
    1024×1024 ``fn`` 6 % slower compiled had rounds that scattered around 1.0–1.1)."""
    eager = [100.0, 101.0, 99.0, 100.0, 102.0, 98.0, 100.0, 101.0]
    scattered = [99.0, 112.0, 104.0, 110.0, 103.0, 111.0, 100.0, 109.0]
    interval = ratio_interval(eager, scattered)
    assert interval.ratio > 1.05 and interval.rounds == 8
    verdict = decide(interval, 100.0, 106.0, [], 3.0)
    assert verdict.id == "inconclusive", verdict  # issue 54: reaches out without clearing
    assert verdict.ci_low < 1.05 < verdict.ci_high and verdict.band == 0.05
    assert f"({verdict.ci_low:.2f}×–{verdict.ci_high:.2f}×)" in verdict.headline
    assert "slower" not in verdict.headline
    steady = ratio_interval(eager, [e * 1.1 for e in eager])
    assert decide(steady, 100.0, 110.0, [], 3.0).id == "keep-eager"
    faster = ratio_interval(eager, [e * 0.8 for e in eager])
    assert decide(faster, 100.0, 80.0, [], 3.0).id == "compile-wins"


def test_measured_noise_is_the_uncertainty_of_the_median_ratio() -> None:
    assert measured_noise([1.0, 1.0, 1.0]) == 0.0  # too few rounds to say
    assert measured_noise([2.0] * 20) == 0.0
    steady = measured_noise([1.0, 1.02, 0.98, 1.01, 0.99] * 4)
    noisy = measured_noise([1.0, 1.3, 0.7, 1.2, 0.8] * 4)
    assert 0 < steady < 0.02 < noisy < 0.25
    # A few wild rounds (another process stealing the CPU) barely move it.
    assert measured_noise([1.0, 1.02, 0.98, 1.01, 0.99] * 4 + [30.0, 0.01]) < 0.03


def test_op_changes_leave_metadata_ops_out_of_the_summary() -> None:
    eager = Inventory(
        2, [OpRow("aten::mm", 1, 5), OpRow("aten::add", 1, 3), OpRow("aten::t", 1, 0.1)]
    )
    compiled = Inventory(2, [OpRow("aten::addmm", 1, 6), OpRow("aten::resolve_conj", 3, 0.1)])
    changes = op_changes(eager, compiled)
    assert changes.summary == "aten::mm + aten::add → aten::addmm"
    assert {r.name for r in changes.added} == {"aten::addmm", "aten::resolve_conj"}
    assert op_changes(eager, eager).summary == ""


def test_only_new_copies_count_as_added() -> None:
    same = CopyRow("cpu", "aten::copy_", "aten::index_put_", 1, 100, 1)
    bias = CopyRow("cpu", "aten::copy_", "aten::addmm", 1, 16384, 1)
    assert added_copies(Inventory(1, copies=[same]), Inventory(1, copies=[same, bias])) == [bias]


def test_graph_break_reasons_are_shortened_to_their_explanation() -> None:
    reason = (
        "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace "
        "builtin operator `print`\n  Hint: Avoid calling builtin `print`"
    )
    assert short_reason(reason) == (
        "Failed to trace builtin operator: Dynamo does not know how to trace builtin operator `print`"
    )
    assert short_reason("generic_jump TensorVariable()") == "generic_jump TensorVariable()"


def test_compare_messages_survive_the_pipe() -> None:
    request = CompareRequest(
        1,
        "/a.py",
        "fn",
        "fn(x)",
        "/t/e.json.gz",
        options=JobOptions(compile_mode="reduce-overhead", with_stack=True, steps=2),
        compiled_trace_path="/t/c.json.gz",
    )
    result = CompareResult(
        1,
        eager=ProfileResult(1, "/t/e.json.gz", Measurements(0.0, [1.0, 2.0], 0.0), 2),
        compiled=None,
        compile_error="InductorError: no compiler",
        compile_error_kind="compile-failed",
        graph_breaks=["print"],
        graph_code={"fabc": "/x.py"},
    )
    decoded = FrameDecoder().feed(encode(request) + encode(result))
    assert decoded == [request, result]


# -- sweep --------------------------------------------------------------------------------------


def point(n: int, share: float, verdict: str = "", us: float = 1.0) -> SweepPoint:
    verdict = verdict or ("compute-bound" if share >= 0.5 else "overhead-bound")
    return SweepPoint(n, us, us, 0.0, share, us * share, verdict)


def test_crossover_is_where_every_larger_size_is_compute_bound() -> None:
    assert crossover([point(16, 0.3), point(64, 0.76), point(256, 0.99)]) == 64
    assert crossover([point(16, 0.3), point(64, 0.6), point(256, 0.4), point(1024, 0.9)]) == 1024
    assert crossover([point(16, 0.7), point(64, 0.9)]) is None  # compute-bound throughout
    assert crossover([point(16, 0.1), point(64, 0.2)]) is None  # never
    assert crossover([point(16, 0.1), failed_point(64, "OOM"), point(256, 0.9)]) == 256
    assert crossover([]) is None


def test_the_crossover_line_is_computed_from_the_rows_it_prints() -> None:
    # Issue 40: rows overhead-bound / overhead-bound / low-efficiency, each with a compute
    # share over 50 %, then "crossover: none — compute-bound at every size".
    rows = [
        point(1, 0.6, "overhead-bound"),
        point(4, 0.7, "overhead-bound"),
        point(16, 0.9, "low-efficiency"),
    ]
    assert crossover(rows) == 16
    text = render_sweep(rows, crossover(rows))
    assert text.endswith("crossover: low-efficiency from N=16 (overhead-bound at N=4)")
    small = [point(1, 0.9, "overhead-bound"), point(4, 0.9, "overhead-bound")]
    assert crossover(small) is None
    assert render_sweep(small, None).endswith(
        "crossover: none — still overhead-bound at N=4: try larger sizes"
    )
    big = [point(1, 0.2, "compute-heavy"), point(4, 0.3, "low-efficiency")]
    assert render_sweep(big, crossover(big)).endswith(
        "crossover: none — not overhead-bound at any size (compute-heavy, low-efficiency from N=1)"
    )


def _report(kind: str, median_us: float | None, **verdict: float) -> Report:
    timing = Timing(1.0, 1.0, median_us, 1.0, 3) if median_us is not None else None
    return Report(
        device=Device(kind, kind),
        verdict=Verdict(
            "v",
            "h",
            verdict.get("cpu_us", 0.0),
            verdict.get("device_us", 0.0),
            verdict.get("overhead_share"),
        ),
        timing=timing,
        profiler_overhead_us=None,
        findings=[],
        top_ops=[],
        steps=[],
    )


def test_compute_share_on_cpu_and_gpu() -> None:
    assert compute_share(_report("cpu", 3.0, overhead_share=0.7)) == pytest.approx(0.3)
    gpu = _report("cuda", 500.0, device_us=450.0, overhead_share=0.9)
    assert compute_share(gpu) == pytest.approx(0.9)
    assert compute_share(_report("cpu", None)) is None
    assert compute_share(_report("cuda", 500.0, device_us=math.nan)) is None
    point = point_from_report(64, gpu, "/t.json.gz")
    assert (point.n, point.compute_share, point.trace_path) == (
        64,
        pytest.approx(0.9),
        "/t.json.gz",
    )
    assert point.compute_us == pytest.approx(450.0) and point.cpu_us is None


def test_sweep_table_names_the_crossover() -> None:
    points = [
        point(16, 0.3, us=3.3),
        point(64, 0.76, us=9.6),
        failed_point(256, "worker died\nmore"),
    ]
    text = render_sweep(points, 64)
    assert re.search(r"16\s+3\.3 µs\s+3\.3 µs\s+1\.0 µs\s+30 %\s+overhead-bound", text), text
    assert "failed: worker died" in text
    assert text.endswith("crossover: compute-bound from N=64 (overhead-bound at N=16)")
    assert "try larger sizes" in render_sweep([point(16, 0.1), point(64, 0.2)], None)


def test_sweep_markdown_is_the_same_table() -> None:
    points = [point(16, 0.3, us=3.3), point(64, 0.76, us=9.6), failed_point(256, "a | b\nmore")]
    sweep = Sweep("N", "fn(torch.randn({N}))", points, 64, "/tmp/fn.svg")
    markdown = sweep_markdown("fn", sweep)
    lines = markdown.splitlines()
    assert lines[0] == "## `fn` across N"
    assert "| N | wall/call | CPU ops (prof.) | compute time | compute | verdict |" in lines
    assert "| 16 | 3.3 µs | 3.3 µs | 1.0 µs | 30 % | overhead-bound |" in lines
    assert any(line.startswith("| **64** | **9.6 µs** |") for line in lines)
    assert "| 256 | — | — | — | — | failed: a \\| b |" in lines
    assert "crossover: compute-bound from N=64 (overhead-bound at N=16)" in lines
    assert lines[-1] == "Chart: `/tmp/fn.svg`"


def test_sweep_svg_parses_with_one_point_per_size_and_escapes_text() -> None:
    points = [point(16, 0.3, us=3.3), point(64, 0.76, us=9.6), point(256, 0.99, us=344.0)]
    svg = sweep_svg([*points, failed_point(1024, "OOM")], 64, "Model<T>.forward & co", "B")
    root = ET.fromstring(svg.encode())
    circles = [c for c in root.iter(f"{SVG}circle") if c.get("class") == "point"]
    assert [c.get("data-n") for c in circles] == ["16", "64", "256"]
    assert [c.get("data-verdict") for c in circles] == [
        "overhead-bound",
        "compute-bound",
        "compute-bound",
    ]
    assert len([r for r in root.iter(f"{SVG}rect") if r.get("class") == "time-point"]) == 3
    assert [line.get("class") for line in root.iter(f"{SVG}line")].count("crossover") == 1
    assert root.find(f"{SVG}title").text == "Model<T>.forward & co"  # type: ignore[union-attr]
    assert "crossover: compute-bound from B=64" in svg
    assert "<script" not in svg and "href" not in svg
    one = ET.fromstring(sweep_svg([point(16, 0.3)], None, "fn").encode())
    assert len([c for c in one.iter(f"{SVG}circle") if c.get("class") == "point"]) == 1
