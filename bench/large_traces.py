"""Memory and time of ``torchscope analyze`` on large synthetic traces (issue 25).

For each size (``--sizes``, default 1M,10M,30M events) it writes a synthetic trace
(``run_all.synthesise``: the real DDP trace's events repeated with shifted timestamps, ~196
bytes of JSON per event) under a temporary folder, deletes it after, and runs, each in a
fresh process (peak RSS from ``os.wait4``, this process kept small: the traces are written
by a child):

- ``torchscope analyze TRACE``: peak RSS ÷ JSON size, µs per event (wall and CPU);
- ``torchscope analyze TRACE --steps 3-4`` (``--steps``): the same, next to the chosen steps'
  share of the trace;
- HolisticTraceAnalysis (load + temporal breakdown, ``analyze_speed.py``'s child) at the
  smallest size, when it is installed (``pip install -r bench/requirements.txt``).

Then the slope: the CPU µs per event between consecutive sizes (fixed costs cancel out; equal
slopes mean time linear in events). Targets (issue 25), printed beside the figures, and
``MISSED`` where one is missed: peak RSS ≤ 0.5× the JSON at 10M events and above; slope
within 1.5× of the first; ``--steps`` peak ≤ the steps' share of the whole run's peak +
64 MB.

30M events is ~5.5 GiB of JSON: it needs that much free disk under ``--tmp`` (default the
system's temporary folder; ~8 GB free to be safe), ~10 GB of memory for the whole-trace run,
and 10-20 minutes on a 2-core machine (writing the trace is most of it); leave it out with
``--sizes 1M,10M``. Wall times are only as good as the machine is quiet: the CPU figures
(user + system of the child) are the ones to compare.

``--server MB`` instead measures the language server: a real ``torchscope serve`` over
stdio opens a synthetic trace of about MB megabytes (``torchscope.analyzeTrace``, analysed
in its child process) and its own RSS (VmRSS) is printed before and after; the target is
growth under 50 MB (``tests/reliability/test_analysis_child.py`` does this with 100 MB in
the test run; ``--server 2000`` is the issue's 2 GB).

    .venv/bin/python bench/large_traces.py [--sizes 1M,10M,30M] [--steps 3-4] [--no-hta]
    .venv/bin/python bench/large_traces.py --server 2000
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TORCHSCOPE = REPO / ".venv" / "bin" / "torchscope"
MIB = 1 << 20
TARGET_PEAK = 0.5
TARGET_PEAK_FROM = 10_000_000
TARGET_SLOPE = 1.5
STEPS_CONSTANT = 64 << 20
_SYNTH = (
    "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
    "from run_all import synthesise; print(synthesise(int(sys.argv[2]), Path(sys.argv[3])))"
)
_STEP_COUNT = (
    "import sys, gzip, json; sys.path.insert(0, sys.argv[1]); from run_all import TRACE; "
    "e = json.loads(gzip.decompress(TRACE.read_bytes()))['traceEvents']; "
    "print(len(e), len({x['name'] for x in e if x.get('ph') == 'X' "
    "and x['name'].startswith('ProfilerStep#')}))"
)


class Run(NamedTuple):
    wall_s: float
    cpu_s: float
    peak: int


def run(command: list[str]) -> Run:
    """One fresh process, stdout to /dev/null: wall, CPU (user + system), its peak RSS."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
        if code != 0:
            err.seek(0)
            message = err.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"{' '.join(command)} failed (exit {code}):\n{message}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


def synthesise(events: int, path: Path) -> int:
    """A synthetic trace of ``events`` events at ``path``, written by a child process (its
    memory must not count in the next child's ``ru_maxrss``); the file's size."""
    out = subprocess.run(
        [sys.executable, "-c", _SYNTH, str(BENCH), str(events), str(path)],
        capture_output=True, text=True, check=True,
    )
    return int(out.stdout.split()[-1])


def base_shape() -> tuple[int, int]:
    """(events, ProfilerStep count) of the trace ``synthesise`` repeats."""
    out = subprocess.run(
        [sys.executable, "-c", _STEP_COUNT, str(BENCH)], capture_output=True, text=True,
        check=True,
    )
    events, steps = map(int, out.stdout.split())
    return events, steps


def size_arg(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def hta_run(path: Path) -> Run | None:
    """HTA's load + temporal breakdown of ``path``, or None when HTA is not installed."""
    if importlib.util.find_spec("hta") is None:
        return None
    return run([sys.executable, str(BENCH / "analyze_speed.py"), "--child", "hta", str(path)])


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


class Size(NamedTuple):
    events: int
    json_bytes: int
    whole: Run
    steps: Run
    share: float


def measure(events: int, folder: Path, steps: str, shape: tuple[int, int], hta: bool) -> Size:
    path = folder / f"synth_{events}.json"
    try:
        size = synthesise(events, path)
        print(f"{events:>11,} events, {size / MIB:,.0f} MiB of JSON", flush=True)
        whole = run([str(TORCHSCOPE), "analyze", str(path)])
        part = run([str(TORCHSCOPE), "analyze", str(path), "--steps", steps])
        first, last = map(int, steps.split("-"))
        share = (last - first + 1) * shape[0] / (shape[1] * events)
        _print_row("torchscope", events, size, whole)
        _print_row(f"--steps {steps}", events, size, part)
        if hta:
            hta_measured = hta_run(path)
            if hta_measured is None:
                print("  HTA: not installed (pip install -r bench/requirements.txt): skipped")
            else:
                _print_row("HTA", events, size, hta_measured)
                print(f"  HTA ÷ torchscope: {hta_measured.wall_s / whole.wall_s:.1f}× the "
                      f"time, {hta_measured.peak / whole.peak:.1f}× the peak RSS")
    finally:
        path.unlink(missing_ok=True)
    return Size(events, size, whole, part, share)


def _print_row(label: str, events: int, size: int, r: Run) -> None:
    print(
        f"  {label}: {r.wall_s:.1f} s ({r.cpu_s:.1f} s CPU), {r.wall_s / events * 1e6:.2f} µs/event"
        f" ({r.cpu_s / events * 1e6:.2f} CPU), peak {r.peak / MIB:,.0f} MiB = "
        f"{r.peak / size:.2f}× the JSON"
    )


def report(sizes: list[Size], steps: str) -> int:
    """The table, the slopes, and the targets beside them; the number missed."""
    print(
        "\n| events | JSON MiB | whole: peak ÷ JSON | µs/event (CPU) | "
        f"--steps {steps}: peak ÷ JSON | µs/event (CPU) | steps' share |"
    )
    print("|---|---|---|---|---|---|---|")
    missed = 0
    for s in sizes:
        w, p = s.whole, s.steps
        print(
            f"| {s.events:,} | {s.json_bytes / MIB:,.0f} | {w.peak / s.json_bytes:.2f}× | "
            f"{w.wall_s / s.events * 1e6:.2f} ({w.cpu_s / s.events * 1e6:.2f}) | "
            f"{p.peak / s.json_bytes:.2f}× | {p.wall_s / s.events * 1e6:.2f} "
            f"({p.cpu_s / s.events * 1e6:.2f}) | {s.share:.4f} |"
        )
    print("\ntargets (issue 25):")
    for s in sizes:
        ratio = s.whole.peak / s.json_bytes
        if s.events >= TARGET_PEAK_FROM:
            ok = ratio <= TARGET_PEAK
            missed += not ok
            print(f"  {s.events:,}: whole peak {ratio:.2f}× the JSON, target ≤ {TARGET_PEAK}×: "
                  f"{verdict(ok)}")
        allowed = s.share * s.whole.peak + STEPS_CONSTANT
        ok = s.steps.peak <= allowed
        missed += not ok
        print(
            f"  {s.events:,}: --steps {steps} peak {s.steps.peak / MIB:,.0f} MiB, target ≤ "
            f"share × whole peak + {STEPS_CONSTANT >> 20} MiB = {allowed / MIB:,.0f} MiB: "
            f"{verdict(ok)}"
        )
    if not any(s.events >= TARGET_PEAK_FROM for s in sizes):
        print(f"  (no size of {TARGET_PEAK_FROM:,} events or more: the peak target is not tested)")
    return missed + _slopes(sizes)


def _slopes(sizes: list[Size]) -> int:
    """CPU µs per event between consecutive sizes; linear when the last is within
    :data:`TARGET_SLOPE` of the first (with two sizes: of the smaller one's own µs/event)."""
    if len(sizes) < 2:
        print("  (one size: no slope)")
        return 0
    missed = 0
    for kind in ("whole", "steps"):
        slopes = []
        for a, b in zip(sizes, sizes[1:]):
            ra, rb = getattr(a, kind), getattr(b, kind)
            slopes.append((rb.cpu_s - ra.cpu_s) / (b.events - a.events) * 1e6)
        if len(slopes) > 1:
            base, against = slopes[0], "the first slope"
        else:
            base = getattr(sizes[0], kind).cpu_s / sizes[0].events * 1e6
            against = f"{sizes[0].events / 1e6:g}M's own µs/event ({base:.2f})"
        ratio = slopes[-1] / base
        ok = ratio <= TARGET_SLOPE
        missed += not ok
        spans = ", ".join(
            f"{a.events / 1e6:g}M→{b.events / 1e6:g}M {s:.2f}"
            for (a, b), s in zip(zip(sizes, sizes[1:]), slopes)
        )
        print(
            f"  slope ({kind}, CPU µs/event): {spans}; last ÷ {against}: {ratio:.2f}, "
            f"target ≤ {TARGET_SLOPE} (linear): {verdict(ok)}"
        )
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1M,10M,30M", help="events per trace (K, M suffixes)")
    parser.add_argument("--steps", default="3-4", help="the --steps range measured")
    parser.add_argument("--no-hta", action="store_true", help="leave HTA out")
    parser.add_argument("--tmp", type=Path, default=None, help="where the traces are written")
    parser.add_argument("--server", type=float, default=None, metavar="MB",
                        help="measure the language server's RSS opening a trace of MB MB")
    args = parser.parse_args()
    if args.server is not None:
        import server_memory

        return server_memory.main(args.server)
    events = sorted(size_arg(x) for x in args.sizes.split(","))
    shape = base_shape()
    with tempfile.TemporaryDirectory(prefix="torchscope-large-", dir=args.tmp) as folder:
        sizes = [
            measure(n, Path(folder), args.steps, shape, hta=not args.no_hta and n == events[0])
            for n in events
        ]
    missed = report(sizes, args.steps)
    print(f"{missed} target(s) missed" if missed else "every target met")
    print(json.dumps({"missed": missed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
