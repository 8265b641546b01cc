"""How fast is ``torchscope analyze`` on a big trace, next to HTA and next to plain parsing?

Runs, in the same session and interleaved, each in a fresh Python process:

- **floor**: ``gzip.decompress`` + ``json.loads`` of the file, nothing else: no analysis can
  read a Kineto trace in less;
- **torchscope**: ``analyze_trace`` + ``render_report`` (what ``torchscope analyze`` does
  before printing);
- **HTA**: HolisticTraceAnalysis ``TraceAnalysis(trace_dir=…)`` (load) +
  ``get_temporal_breakdown()`` (a bench-only dependency: ``pip install -r bench/requirements.txt``).

Each run frees what it built before its clock stops (``analyze_trace`` frees its trace before
returning, about 0.05 s here; the floor's and HTA's objects would otherwise be freed only after
the clock). torchscope's bytecode is compiled first, as installing it would (HTA's already
is). Each run reports wall time with and without its imports and the process's peak RSS; the
medians over ``--repeat`` runs and the ratios are printed. Targets (issue 16; ``run_all.py``
prints them in its table too): torchscope at least 10× faster than HTA, at most half the
floor's time, at most half HTA's peak memory.

    .venv/bin/python bench/analyze_speed.py [TRACE] [--repeat 3]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO / "tests" / "data" / "traces" / "hta_ddp_v100_rank1.json.gz"
KINDS = ("floor", "torchscope", "hta")

TARGET_VS_HTA = 10.0
TARGET_VS_FLOOR = 0.5
TARGET_MEMORY = 0.5


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def child(kind: str, trace: Path) -> dict[str, Any]:
    """One measurement, in this (fresh) process."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    if kind == "floor":
        import gzip

        t1, c1 = time.perf_counter(), time.process_time()
        data = trace.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        doc = json.loads(data)
        events = len(doc["traceEvents"])
        summary = f"{events} events"
        del doc, data  # freed inside the clock, as torchscope's engine frees its trace
    elif kind == "torchscope":
        sys.path.insert(0, str(REPO / "server"))
        from torchscope.analysis import analyze_trace
        from torchscope.report import render_report

        t1, c1 = time.perf_counter(), time.process_time()
        report = analyze_trace(trace)
        text = render_report(report)
        summary = report.verdict.headline + f" ({len(text.splitlines())} lines)"
    elif kind == "hta":
        import logging

        logging.disable(logging.CRITICAL)
        from hta.trace_analysis import TraceAnalysis  # type: ignore[import-untyped]

        t1, c1 = time.perf_counter(), time.process_time()
        with tempfile.TemporaryDirectory() as folder:
            os.symlink(trace, Path(folder) / trace.name)
            analysis = TraceAnalysis(trace_dir=folder)
            breakdown = analysis.get_temporal_breakdown(visualize=False)
        summary = "temporal breakdown: " + ", ".join(
            f"{c}={breakdown[c].iloc[0]}" for c in breakdown.columns if c.endswith("pctg")
        )
        del analysis, breakdown  # freed inside the clock, as torchscope's engine frees its trace
    else:
        raise SystemExit(f"unknown kind {kind}")
    t2, c2 = time.perf_counter(), time.process_time()
    return {
        "kind": kind,
        "total_s": t2 - t0,
        "work_s": t2 - t1,
        "import_s": t1 - t0,
        "cpu_total_s": c2 - c0,
        "cpu_work_s": c2 - c1,
        "peak_mb": _peak_mb(),
        "summary": summary,
    }


def compile_bytecode(package: Path = REPO / "server" / "torchscope") -> None:
    """Compile torchscope's bytecode (``package``: this checkout's, by default) before timing
    it, as installing a package does.

    HTA and pandas come from site-packages with bytecode that pip compiled at install time.
    A checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (set on these machines) would instead
    recompile every torchscope module in every fresh process (~30 ms) and time the compiler.
    """
    compileall.compile_dir(str(package), quiet=1)


def run_child(kind: str, trace: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(trace)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{kind} run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--skip-hta", action="store_true", help="only floor and torchscope")
    args = parser.parse_args()
    trace = args.trace.resolve()
    if args.child:
        print(json.dumps(child(args.child, trace)))
        return
    if not trace.is_file():
        raise SystemExit(f"no trace at {trace}")
    kinds = [k for k in KINDS if not (k == "hta" and args.skip_hta)]
    if "hta" in kinds:
        try:
            import hta  # type: ignore[import-untyped]  # noqa: F401
        except ImportError:
            raise SystemExit(
                "HTA is not installed: pip install -r bench/requirements.txt (or --skip-hta)"
            ) from None
    compile_bytecode()
    size = trace.stat().st_size / 2**20
    print(
        f"trace: {trace} ({size:.1f} MiB on disk), {args.repeat} runs each, interleaved, one "
        "process per run"
    )
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for _ in range(args.repeat):
        for kind in kinds:
            runs[kind].append(run_child(kind, trace))

    def med(kind: str, key: str) -> float:
        return float(statistics.median(r[key] for r in runs[kind]))

    print()
    head = f"{'':12}{'wall s':>9}{'(no imports)':>13}{'CPU s':>9}{'(no imports)':>13}"
    print(f"{head}{'peak MiB':>10}  result")
    for kind in kinds:
        print(
            f"{kind:12}{med(kind, 'total_s'):9.3f}{med(kind, 'work_s'):13.3f}"
            f"{med(kind, 'cpu_total_s'):9.3f}{med(kind, 'cpu_work_s'):13.3f}"
            f"{med(kind, 'peak_mb'):10.0f}  {runs[kind][-1]['summary'][:70]}"
        )
    print()
    for kind in kinds:
        samples = " ".join(f"{r['total_s']:.3f}" for r in runs[kind])
        print(f"{kind} wall s, round by round: {samples}")
    if "hta" in kinds:
        # Each round runs the three back to back, so a per-round ratio compares runs that saw
        # the same machine load; its spread shows how much the load moved during the session.
        paired = [h["total_s"] / t["total_s"] for h, t in zip(runs["hta"], runs["torchscope"])]
        print(
            f"HTA / torchscope per round (wall): {' '.join(f'{x:.2f}' for x in paired)}"
            f"  median {statistics.median(paired):.2f}×"
        )
    print()
    print("wall time is what a user waits; CPU time of the process is the fairer measure on a")
    print("shared machine (other processes stretch wall time, not CPU time). Ratios for both:")
    for label, total_key, work_key in (
        ("wall", "total_s", "work_s"),
        ("CPU", "cpu_total_s", "cpu_work_s"),
    ):
        _ratios(label, kinds, med, total_key, work_key)


def _ratios(label: str, kinds: list[str], med: Any, total_key: str, work_key: str) -> None:
    ts_total, ts_work = med("torchscope", total_key), med("torchscope", work_key)
    vs_floor = ts_total / med("floor", total_key)
    verdict = "ok" if vs_floor <= TARGET_VS_FLOOR else "MISSED"
    print(
        f"[{label}] torchscope / floor: {vs_floor:6.2f}×  (target ≤ {TARGET_VS_FLOOR}×)  {verdict}"
    )
    if "hta" in kinds:
        vs_hta = med("hta", total_key) / ts_total
        vs_hta_work = med("hta", work_key) / ts_work
        verdict = "ok" if vs_hta >= TARGET_VS_HTA else "MISSED"
        print(
            f"[{label}] HTA / torchscope:   {vs_hta:6.2f}×  (target ≥ {TARGET_VS_HTA}×)  {verdict}"
        )
        print(f"[{label}] HTA / torchscope, leaving imports out: {vs_hta_work:.2f}×")
        if label == "CPU":
            mem = med("torchscope", "peak_mb") / med("hta", "peak_mb")
            verdict = "ok" if mem <= TARGET_MEMORY else "MISSED"
            print(f"peak memory torchscope / HTA: {mem:.2f}  (target ≤ {TARGET_MEMORY})  {verdict}")


if __name__ == "__main__":
    main()
