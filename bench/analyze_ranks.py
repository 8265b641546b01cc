"""Does ``torchscope analyze DIR`` use the cores? A folder of per-rank traces, in parallel
versus one after another.

Copies ``TRACE`` (default: ``hta_ddp_v100_rank1``, 123k events) ``--ranks`` times into a
temporary folder as ``rank<i>.json.gz`` and times, alternating, in the same session:

- **sequential**: ``analyze_trace`` on each file in turn, in one process (what analysing them
  one by one costs, without a process start per file);
- **parallel**: ``analyze_folder`` (a process pool, one process per core), which also aligns
  the ranks and runs the cross-rank rules;
- **dask** (when ``distributed`` is installed): the same on a ``distributed.LocalCluster`` of
  one worker process per core (``analyze_ranks_on``), timed without the cluster's start, so
  it shows what the tasks and the client-side reduce cost against the pool.

Each run is a fresh Python process, timed from outside. Prints every round, the medians and
the ratio parallel / sequential; the target (issue 17) is at most 0.7 on a 2-core machine.

A control runs in the same rounds: a pure-Python busy loop, ``--ranks`` times in turn versus
in a pool of the same kind. Its ratio is what the machine allows right now; an analysis ratio
near the control's means the pool is doing what the cores let it.
The ratio needs idle cores: with the kernel's autogroup scheduling (Linux desktops and this
machine), every process of one terminal session shares one CPU share, so on a machine busy with
other sessions (the load average is printed) a pool cannot get more than the session's share.

    .venv/bin/python bench/analyze_ranks.py [TRACE] [--ranks 8] [--repeat 3]

The dask row's time is the analysis alone; the parallel and sequential rows include their
process's start (about 0.3 s), so dask/parallel slightly favours dask.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = REPO / "tests" / "data" / "traces" / "hta_ddp_v100_rank1.json.gz"
TARGET = 0.7

_SEQUENTIAL = (
    "import sys, pathlib; from torchscope.analysis import analyze_trace\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).iterdir()): analyze_trace(p)\n"
)
_PARALLEL = (
    "import sys; from torchscope.analysis.multi.ranks import analyze_folder\n"
    "view = analyze_folder(sys.argv[1]); assert len(view.ranks) == int(sys.argv[2])\n"
)
_DASK = (
    "import sys, time; from distributed import Client, LocalCluster\n"
    "from torchscope.analysis.multi.rank_cluster import analyze_ranks_on\n"
    "from torchscope.analysis.multi.ranks import trace_files\n"
    "if __name__ == '__main__':\n"
    "    with LocalCluster(threads_per_worker=1, dashboard_address=None) as c, Client(c) as cl:\n"
    "        start = time.perf_counter()\n"
    "        view = analyze_ranks_on(cl, trace_files(__import__('pathlib').Path(sys.argv[1])))\n"
    "        assert len(view.ranks) == int(sys.argv[2])\n"
    "        print(time.perf_counter() - start, file=open(sys.argv[3], 'w'))\n"
)
_CONTROL = (
    "import sys, os, multiprocessing as mp\n"
    "def spin(_):\n"
    "    s = 0\n"
    "    for i in range(8_000_000): s += i\n"
    "    return s\n"
    "n = int(sys.argv[2])\n"
    "if sys.argv[3] == 'seq': [spin(i) for i in range(n)]\n"
    "else:\n"
    "    with mp.get_context('fork').Pool(os.cpu_count()) as pool: pool.map(spin, range(n))\n"
)


def _run(script: str, folder: Path, ranks: int, *extra: str) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "server"), env.get("PYTHONPATH", "")])
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", script, str(folder), str(ranks), *extra],
        env=env,
        check=True,
        cwd=REPO,
    )
    return time.perf_counter() - start


def _run_dask(folder: Path, ranks: int) -> float | None:
    """Seconds of ``analyze_ranks_on`` on a fresh LocalCluster (None: no ``distributed``)."""
    if importlib.util.find_spec("distributed") is None:
        return None
    out = folder.parent / f"{folder.name}.dask-seconds"
    _run(_DASK, folder, ranks, str(out))
    seconds = float(out.read_text())
    out.unlink()
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="torchscope-ranks-"))
    try:
        for i in range(args.ranks):
            shutil.copy(args.trace, folder / f"rank{i}.json.gz")
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{args.ranks} copies of {args.trace.name}, {os.cpu_count()} cores, load {load}")
        seq: list[float] = []
        par: list[float] = []
        dask: list[float] = []
        control: list[float] = []
        for round_ in range(args.repeat):
            seq.append(_run(_SEQUENTIAL, folder, args.ranks))
            par.append(_run(_PARALLEL, folder, args.ranks))
            on_dask = _run_dask(folder, args.ranks)
            if on_dask is not None:
                dask.append(on_dask)
            alone = _run(_CONTROL, folder, args.ranks, "seq")
            control.append(_run(_CONTROL, folder, args.ranks, "pool") / alone)
            print(
                f"round {round_ + 1}: sequential {seq[-1]:.2f} s, parallel {par[-1]:.2f} s, "
                f"ratio {par[-1] / seq[-1]:.2f} (control busy loop: {control[-1]:.2f})"
                + (f", dask {dask[-1]:.2f} s ({dask[-1] / par[-1]:.2f}× parallel)" if dask else "")
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    s, p = statistics.median(seq), statistics.median(par)
    ratio = p / s
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"median: sequential {s:.2f} s, parallel {p:.2f} s")
    print(f"ratio parallel/sequential: {ratio:.2f} ({verdict} the target ≤ {TARGET})")
    if dask:
        d = statistics.median(dask)
        print(
            f"dask (LocalCluster, cluster start excluded): {d:.2f} s, "
            f"dask/parallel {d / p:.2f}, dask/sequential {d / s:.2f}"
        )
    else:
        print('dask: not installed (pip install "torchscope[cluster]")')
    print(
        f"control (busy loop, pool vs in turn): {statistics.median(control):.2f} "
        "— what the machine's free cores allowed in the same rounds"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
