"""The CPU-only verdict on traces recorded by the real torch profiler.

The verdict's time per call must come from the unprofiled measurements, the op count from
the trace's top-level ops (user annotations such as ``ProfilerStep#N`` and ``torchscope:L12``
are not containers), and the decision from dispatch share vs OVERHEAD_BOUND_DISPATCH_SHARE.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import Measurements, analyze_trace, load_trace
from torchscope.analysis.index.nesting import build_nesting
from torchscope.analysis.verdict.verdict import OVERHEAD_BOUND_DISPATCH_SHARE
from torchscope.protocol import to_builtins
from torchscope.report import render_report


def measured(raw: dict[str, Any]) -> Measurements:
    return Measurements(
        cold_us=raw["cold_us"],
        call_us=list(raw["call_us"]),
        dispatch_floor_us=raw["dispatch_floor_us"],
        device_kind="cpu",
        device_name="test CPU",
    )


def test_top_level_ops_are_two_per_call_under_markers(cpu_traces: dict[str, Any]) -> None:
    trace = load_trace(cpu_traces["fn8"])
    nest = build_nesting(trace)
    top = [op.name for i, op in enumerate(trace.ops) if nest.op_parent[i] < 0]
    # 5 active steps × (aten::matmul, aten::add); aten::mm and resolve_conj are nested.
    assert top == ["aten::matmul", "aten::add"] * 5
    assert {a.name for a in trace.annotations} == {f"ProfilerStep#{i}" for i in range(1, 6)} | {
        "torchscope:L12"
    }
    report = analyze_trace(cpu_traces["fn8"])
    assert [s.ops for s in report.steps] == [2] * 5
    assert [s.name for s in report.steps] == [f"ProfilerStep#{i}" for i in range(1, 6)]


def test_small_fn_with_literal_measurements_is_overhead_bound(cpu_traces: dict[str, Any]) -> None:
    m = Measurements(
        cold_us=900.0,
        call_us=[2.6, 2.7, 2.8],
        dispatch_floor_us=1.1,
        device_kind="cpu",
        device_name="x",
    )
    report = analyze_trace(cpu_traces["fn8"], m)
    v = report.verdict
    assert v.id == "overhead-bound"
    assert v.headline == "overhead-bound (CPU): 2.7 µs per call, ~81 % dispatch (2 ops × 1.1 µs)"
    assert v.cpu_us == pytest.approx(2.7)
    assert v.device_us == 0
    assert v.overhead_share == pytest.approx(2 * 1.1 / 2.7)
    assert report.timing is not None
    assert (
        report.timing.cold_us,
        report.timing.min_us,
        report.timing.median_us,
        report.timing.max_us,
    ) == (900.0, 2.6, 2.7, 2.8)
    assert report.timing.calls == 3
    walls = [s.wall_us for s in report.steps]
    assert report.profiler_overhead_us == pytest.approx(statistics.median(walls) - 2.7)


def test_without_a_peak_the_math_is_compute_heavy_not_compute_bound(
    cpu_traces: dict[str, Any],
) -> None:
    # Issue 40: a nanoGPT step read "compute-bound (CPU): 568 ms per call in aten::mm" at
    # 0.52 GFLOP/s. With no peak to hold the math to, its efficiency is unknown.
    m = Measurements(cold_us=30_000.0, call_us=[24_700.0] * 3, dispatch_floor_us=1.1)
    report = analyze_trace(cpu_traces["fn512"], m)
    assert report.verdict.id == "compute-heavy"
    assert report.verdict.cause == "compute"
    assert report.verdict.headline.startswith(
        "compute-heavy (CPU): 24.7 ms per call in aten::mm at "
    )
    assert "efficiency unknown: no peak known for this CPU" in report.verdict.headline
    assert report.rules_skipped["low-efficiency-gemm"].startswith("no peak known for this CPU")
    assert report.top_ops[0].name == "aten::mm"
    assert report.verdict.overhead_share == pytest.approx(2 * 1.1 / 24_700.0)


def test_the_costliest_cause_names_the_verdict(cpu_traces: dict[str, Any]) -> None:
    floor = 1.0
    at = 2 * floor / OVERHEAD_BOUND_DISPATCH_SHARE  # dispatch is half the call: always costliest
    over = analyze_trace(cpu_traces["fn8"], Measurements(0.0, [at], floor)).verdict
    under = analyze_trace(cpu_traces["fn8"], Measurements(0.0, [at * 10], floor)).verdict
    assert (over.id, over.cause) == ("overhead-bound", "dispatch")
    # 8×8 with no peak: the math is the costliest, but its shapes say it is overhead
    assert under.cause in ("compute", "bandwidth")
    assert under.headline.startswith("overhead-bound (CPU, small shapes): "), under.headline
    for v, call in ((over, at), (under, at * 10)):
        costs = [c.us_per_call for c in v.causes]
        assert costs == sorted(costs, reverse=True) and v.causes[0].cause == v.cause
        assert sum(costs) == pytest.approx(call)  # the causes split the whole call
        assert sum(c.share for c in v.causes) == pytest.approx(1.0)


def test_one_thread_faster_makes_threads_the_cause(cpu_traces: dict[str, Any]) -> None:
    m = Measurements(
        0.0, [45.0] * 5, 1.0, threads=2, single_thread_us=[17.0, 16.0, 18.0, 17.0, 17.0]
    )
    v = analyze_trace(cpu_traces["fn8"], m).verdict
    assert (v.id, v.cause) == ("overhead-bound", "threads")
    assert v.causes[0].us_per_call == pytest.approx(28.0)
    assert v.headline == (
        "overhead-bound (CPU threads): 45 µs per call; with 1 thread 17 µs (2.6× faster)"
    )


def test_the_threads_cost_is_over_the_time_each_side_ran(cpu_traces: dict[str, Any]) -> None:
    """N threads 45 µs of which 25 waiting for a CPU, one thread 17 µs of which none: the
    threads cost 3 µs of the 20 the call ran, not the 28 the wall times differ by."""
    from torchscope.analysis.verdict.causes import threads_cost

    walls = Measurements(0.0, [45.0] * 5, 1.0, threads=2, single_thread_us=[17.0] * 5)
    assert threads_cost(walls) == pytest.approx(28.0)
    waited = Measurements(
        0.0, [45.0] * 5, 1.0, threads=2, single_thread_us=[17.0] * 5,
        wait_us=[25.0] * 5, single_wait_us=[0.0] * 5,
    )  # fmt: skip
    assert threads_cost(waited) == pytest.approx(3.0)
    v = analyze_trace(cpu_traces["fn8"], waited).verdict
    assert v.cause != "threads" and sum(c.us_per_call for c in v.causes) == pytest.approx(20.0)


def test_compute_below_the_floor_is_not_compute_bound(cpu_traces: dict[str, Any]) -> None:
    from torchscope.analysis.results import Peaks
    from torchscope.analysis.verdict.causes import COMPUTE_FLOOR

    floor = COMPUTE_FLOOR[("cpu", "measured")]
    mm = 2 * 512**3  # fn512: one 512×512 matmul per call
    for gflops, expected in (
        (mm / 24_700.0 / 1e3 / (floor / 2), "low-efficiency"),
        (mm / 24_700.0 / 1e3 / (floor * 2), "compute-bound"),
    ):
        peaks = Peaks({"float32": gflops}, 10.0, "measured")
        m = Measurements(30_000.0, [24_700.0] * 3, 1.1, peaks=peaks)
        v = analyze_trace(cpu_traces["fn512"], m).verdict
        assert (v.id, v.cause) == (expected, "compute"), v
        assert v.efficiency is not None
        assert (v.efficiency >= floor) == (expected == "compute-bound")


def test_waiting_for_a_cpu_is_set_aside_not_a_cause(cpu_traces: dict[str, Any]) -> None:
    """A 512×512 matmul that ran 24.7 ms of a 98.8 ms call (the rest waiting for a core that
    another process held) is the same compute-bound call as on a quiet machine: the efficiency
    and the causes are over the time it ran, and the headline says how long it waited."""
    from torchscope.analysis.results import Peaks
    from torchscope.analysis.verdict.causes import COMPUTE_FLOOR

    mm = 2 * 512**3
    peaks = Peaks({"float32": mm / 24_700.0 / 1e3 / (COMPUTE_FLOOR[("cpu", "measured")] * 2)},
                  10.0, "measured")  # fmt: skip
    quiet = analyze_trace(cpu_traces["fn512"], Measurements(0.0, [24_700.0] * 3, 1.1, peaks=peaks))
    busy = Measurements(0.0, [98_800.0] * 3, 1.1, peaks=peaks, wait_us=[74_100.0] * 3)
    report = analyze_trace(cpu_traces["fn512"], busy)
    v = report.verdict
    assert (v.id, v.cause) == (quiet.verdict.id, quiet.verdict.cause) == ("compute-bound", "compute")
    assert v.efficiency == pytest.approx(quiet.verdict.efficiency)
    assert [c.cause for c in v.causes] == [c.cause for c in quiet.verdict.causes]
    assert sum(c.us_per_call for c in v.causes) == pytest.approx(24_700.0)  # the time it ran
    assert v.headline.startswith("compute-bound (CPU): 98.8 ms per call in aten::mm")
    assert v.headline.endswith("; 75 % of it waiting for a CPU (another process held the core)")
    assert report.timing is not None and report.timing.wait_us == pytest.approx(74_100.0)
    assert "waiting for a CPU" not in quiet.verdict.headline
    # Without the wait taken out, the same numbers read as slow math.
    unaware = Measurements(0.0, [98_800.0] * 3, 1.1, peaks=peaks)
    assert analyze_trace(cpu_traces["fn512"], unaware).verdict.id == "low-efficiency"


def test_page_faults_that_cost_most_make_the_verdict(cpu_traces: dict[str, Any]) -> None:
    """A 512×512 call whose heap was given back after every call (2016 faults ≈ 13.1 ms of a
    24.3 ms call, as a notebook kernel measured once) is overhead-bound on its page faults;
    the same call without the faults is compute-bound in its matmul."""
    from torchscope.analysis.results import Peaks
    from torchscope.analysis.verdict.causes import COMPUTE_FLOOR

    mm = 2 * 512**3
    peaks = Peaks({"float32": mm / 11_200.0 / 1e3 / (COMPUTE_FLOOR[("cpu", "measured")] * 2)},
                  10.0, "measured")  # fmt: skip
    steady = Measurements(0.0, [11_200.0] * 3, 1.1, peaks=peaks, page_faults=[0.0] * 3)
    trimmed = Measurements(
        0.0, [24_300.0] * 3, 1.1, peaks=peaks, page_faults=[2016.0] * 3, page_fault_us=6.5
    )
    calm = analyze_trace(cpu_traces["fn512"], steady).verdict
    v = analyze_trace(cpu_traces["fn512"], trimmed).verdict
    assert (calm.id, calm.cause) == ("compute-bound", "compute")
    assert (v.id, v.cause) == ("overhead-bound", "page-faults")
    assert v.causes[0].us_per_call == pytest.approx(2016 * 6.5)
    assert v.headline == (
        "overhead-bound (CPU page faults): 24.3 ms per call, 2016 page faults per call ≈ "
        "13.1 ms (54 %)"
    )


def test_faults_that_cost_more_cpu_than_the_call_say_the_call(cpu_traces: dict[str, Any]) -> None:
    """Threads fault in parallel: faults × their cost is CPU time and can exceed the call (an
    H200 host read '2824 page faults per call ≈ 4.7 ms (100 % of the call)' for a 3.1 ms call,
    beside a verdict of 3.1 ms). The finding says the call, then the CPU time."""
    m = Measurements(0.0, [3_100.0] * 3, 1.1, page_faults=[2824.0] * 3, page_fault_us=1.66)
    report = analyze_trace(cpu_traces["fn512"], m)
    assert report.verdict.headline.endswith("2824 page faults per call ≈ 3.1 ms (100 %)")
    (churn,) = [f for f in report.findings if f.rule == "allocation-churn"]
    assert churn.message.startswith(
        "2824 page faults per call ≈ 3.1 ms (all of the call: 4.7 ms of CPU over its threads)"
    ), churn.message


def test_a_small_gemm_below_the_floor_is_overhead_bound(cpu_traces: dict[str, Any]) -> None:
    """The guide's lesson: an 8×8 matmul far from the peak is its fixed cost per call, so the
    verdict is overhead-bound (small shapes) with the cause still in the ops' bodies; the same
    efficiency on a 512×512 matmul is low-efficiency (see the test above)."""
    from torchscope.analysis.results import Peaks

    floor = 1.0
    call = 20 * floor / OVERHEAD_BOUND_DISPATCH_SHARE  # the bodies cost far more than dispatch
    m = Measurements(0.0, [call] * 3, floor, peaks=Peaks({"float32": 50.0}, 10.0, "measured"))
    v = analyze_trace(cpu_traces["fn8"], m).verdict
    assert v.cause == "compute" and v.id == "overhead-bound", v
    assert v.headline.startswith("overhead-bound (CPU, small shapes): "), v.headline
    assert "aten::mm" in v.headline and "thin matrix" in v.headline


def test_real_measurements_give_the_same_share_formula(cpu_traces: dict[str, Any]) -> None:
    raw = cpu_traces["fn8_measured"]
    report = analyze_trace(cpu_traces["fn8"], measured(raw))
    median = statistics.median(raw["call_us"])
    expected = min(1.0, 2 * raw["dispatch_floor_us"] / median)
    assert report.verdict.overhead_share == pytest.approx(expected)
    assert report.verdict.cpu_us == pytest.approx(median)
    # The profiled step is much slower than the real call: that difference is the profiler's.
    assert report.profiler_overhead_us is not None and report.profiler_overhead_us > 0
    big = analyze_trace(cpu_traces["fn512"], measured(cpu_traces["fn512_measured"]))
    assert big.verdict.id == "compute-heavy"  # no peaks in the recorded measurements
    assert "aten::mm" in big.verdict.headline


def test_without_measurements_the_headline_says_profiled(cpu_traces: dict[str, Any]) -> None:
    report = analyze_trace(cpu_traces["fn8"])
    assert report.timing is None and report.profiler_overhead_us is None
    assert "profiled" in report.verdict.headline
    assert report.verdict.id in ("overhead-bound", "compute-bound")
    assert report.verdict.basis == "profile"


def test_plain_json_without_markers(cpu_traces: dict[str, Any]) -> None:
    path: Path = cpu_traces["fn8_plain"]
    assert path.suffix == ".json"
    report = analyze_trace(path, Measurements(100.0, [3.0], 1.0))
    assert [s.ops for s in report.steps] == [2] * 5
    assert report.device.kind == "cpu"


def test_to_dict_schema_is_json_ready(cpu_traces: dict[str, Any]) -> None:
    m = Measurements(
        cold_us=900.0,
        call_us=[2.6, 2.7, 2.8],
        dispatch_floor_us=1.1,
        device_kind="cpu",
        device_name="Xeon",
    )
    d = to_builtins(analyze_trace(cpu_traces["fn8"], m))
    json.dumps(d, allow_nan=False)
    assert d["device"] == {"kind": "cpu", "name": "Xeon"}
    assert set(d["verdict"]) >= {"id", "headline", "cpu_us", "device_us", "overhead_share"}
    assert set(d["timing"]) >= {"cold_us", "min_us", "median_us", "max_us", "calls"}
    assert isinstance(d["profiler_overhead_us"], float)
    assert isinstance(d["findings"], list)
    for f in d["findings"]:
        assert set(f) >= {"rule", "line", "file", "severity", "message", "cost_us"}
        assert f["severity"] in ("error", "warning", "information", "hint")
    assert {op["name"] for op in d["top_ops"]} >= {"aten::mm", "aten::add", "aten::matmul"}
    for op in d["top_ops"]:
        assert set(op) >= {"name", "calls", "self_cpu_us", "device_us"}
    assert len(d["steps"]) == 5
    for s in d["steps"]:
        assert set(s) >= {
            "name",
            "wall_us",
            "cpu_op_us",
            "device_busy_us",
            "device_busy_share",
            "launches",
            "syncs",
            "copies",
        }
        assert s["launches"] == 0 and s["device_busy_us"] == 0


def fn8_shaped_trace(kineto: Any, path: Path) -> Path:
    """Fixed data shaped like the recorded ``fn8`` profile (five steps of ``torchscope:L12``
    around aten::matmul > aten::mm and aten::add, with the times such a step took): the
    findings then follow from the measurements alone, not from one live run's timings (a live
    recording once gave a ``dispatch-gap`` as well)."""
    b = kineto(gpu=False)
    for step in range(5):
        t = step * 100.0
        b.step(step + 1, t, 40)
        b.annotation("torchscope:L12", t + 2, 34)
        b.op("aten::matmul", t + 4, 18, **{"Input Dims": [[8, 8], [8, 8]]})
        b.op("aten::mm", t + 6, 14, **{"Input Dims": [[8, 8], [8, 8]]})
        b.op("aten::add", t + 24, 9, **{"Input Dims": [[8, 8], [8]]})
    written: Path = b.write(path)
    return written


def test_cold_start_finding_from_measurements(kineto: Any, tmp_path: Path) -> None:
    trace = fn8_shaped_trace(kineto, tmp_path / "fn8.json")
    slow_first = analyze_trace(trace, Measurements(5000.0, [2.7] * 5, 1.1))
    assert [f.rule for f in slow_first.findings] == ["cold-start"]
    assert slow_first.findings[0].cost_us == pytest.approx(5000.0 - 2.7)
    steady = analyze_trace(trace, Measurements(3.0, [2.7] * 5, 1.1))
    assert "cold-start" not in [f.rule for f in steady.findings]


def test_render_report_shows_verdict_timing_steps_and_ops(cpu_traces: dict[str, Any]) -> None:
    m = Measurements(
        cold_us=5000.0,
        call_us=[2.6, 2.7, 2.8],
        dispatch_floor_us=1.1,
        device_kind="cpu",
        device_name="Xeon",
    )
    text = render_report(analyze_trace(cpu_traces["fn8"], m))
    lines = text.splitlines()
    assert lines[0] == "device: cpu (Xeon)"
    assert (
        lines[1]
        == "verdict: overhead-bound (CPU): 2.7 µs per call, ~81 % dispatch (2 ops × 1.1 µs)"
    )
    assert (
        "timing (unprofiled): median 2.7 µs per call (min 2.6 µs, max 2.8 µs, 3 samples, "
        "spread 4 %); first call 5.0 ms" in text
    )
    assert "profiler overhead:" in text
    assert "ProfilerStep#5" in text and "median" in text
    assert "cold-start" in text
    assert "aten::mm" in text


def test_fast_line_markers_recorded_as_cpu_op_are_not_ops(cpu_traces: dict[str, Any]) -> None:
    """The worker marks lines with ``_RecordFunctionFast``, which torch records as ``cpu_op``:
    such markers must stay annotations, or every call would count one op more."""
    import gzip

    raw = json.loads(gzip.decompress(Path(cpu_traces["fn8_fast"]).read_bytes()))
    markers = [e for e in raw["traceEvents"] if e.get("name") == "torchscope:L12"]
    assert markers, "the fixture should contain line markers"
    trace = load_trace(cpu_traces["fn8_fast"])
    assert "torchscope:L12" not in {o.name for o in trace.ops}
    assert "torchscope:L12" in {a.name for a in trace.annotations}
    report = analyze_trace(cpu_traces["fn8_fast"], Measurements(100.0, [2.7], 1.1))
    assert [s.ops for s in report.steps] == [2] * 5
    assert report.verdict.headline.endswith("(2 ops × 1.1 µs)")


def test_line_stats_from_fast_markers(cpu_traces: dict[str, Any]) -> None:
    """``lines.line_stats`` (per-line numbers for the editor) sees the worker-style markers."""
    report = analyze_trace(cpu_traces["fn8_fast"], Measurements(100.0, [2.7], 1.1))
    (line,) = report.lines
    assert line.line == 12 and line.share == pytest.approx(1.0)
    assert line.hits == pytest.approx(1.0)
    names = {op.name for op in line.ops}
    assert {"aten::matmul", "aten::mm", "aten::add"} <= names


def _add_dominated_trace(kineto: Any, path: Path, n: int) -> Path:
    """A CPU trace of three steps, each a small matmul and an ``n``×``n`` add that takes most
    of the op time (the add's bytes: three fp32 ``n``×``n`` tensors)."""
    k = kineto(gpu=False)
    dims = [[n, n], [n, n], []]
    for step in range(3):
        t0 = 1000.0 * step
        k.step(step, t0, 900.0)
        mm = {"Input Dims": [[16, 16], [16, 16]], "Input type": ["float", "float"]}
        add = {"Input Dims": dims, "Input type": ["float", "float", "Scalar"]}
        k.op("aten::mm", t0 + 10, 50.0, **mm)
        k.op("aten::add", t0 + 100, 700.0, **add)
    return k.write(path)


def test_a_cache_resident_add_is_overhead_not_bandwidth(kineto: Any, tmp_path: Path) -> None:
    """A 64×64 add (48 KiB per call) cannot wait on main memory: its cost is bandwidth by kind,
    but the verdict is overhead-bound (small tensors); a 1024×1024 add (12 MiB) is memory-bound."""
    from torchscope.analysis.measure.roofline import CACHE_RESIDENT_BYTES
    from torchscope.analysis.results import Peaks

    peaks = Peaks({"float32": 100.0}, 10.0, "measured")
    seen: dict[int, Any] = {}
    for n in (64, 1024):
        trace = _add_dominated_trace(kineto, tmp_path / f"add{n}.json", n)
        v = analyze_trace(trace, Measurements(0.0, [800.0] * 3, 1.0, peaks=peaks)).verdict
        assert v.cause == "bandwidth", v
        seen[n] = v
    assert 3 * 64 * 64 * 4 < CACHE_RESIDENT_BYTES <= 3 * 1024 * 1024 * 4
    assert seen[64].id == "overhead-bound", seen[64]
    assert seen[64].headline.startswith("overhead-bound (CPU, small tensors): ")
    assert "aten::add on 48.0 KiB per call" in seen[64].headline, seen[64].headline
    assert seen[1024].id == "memory-bound", seen[1024]
