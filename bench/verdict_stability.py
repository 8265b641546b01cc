"""Is the verdict one answer you can trust? The same call, profiled in 5 fresh processes, quiet
and with one core held, on three kinds of function (issue 40's acceptance):

- **overhead**: a chain of 1-element ops (dispatch dominates);
- **compute**: a 512×512 float32 GEMM;
- **threads**: an elementwise pass over 4M floats at 2 intra-op threads (one of them waits
  whenever another process holds its core).

"One core held" is a busy-loop process pinned (``os.sched_setaffinity``) to the first CPU this
process may use, started before and stopped after the runs of that case. Each run is
``torchscope profile FILE::FN --call … --json`` in a fresh process.

A case passes when the verdict id agrees in at least 4 of the 5 runs, or every run whose id
differs from the most common one says ``stable: false``. Prints one row per case: the ids seen,
how many agree, whether the others said unstable, the median time per call (min–max over
runs), the median spread and machine busy share; exits 1 when a case fails.

    .venv/bin/python bench/verdict_stability.py [--runs 5] [--timing-budget 2] [--kinds threads]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.core_holder import core_held  # noqa: E402

FUNCTIONS = textwrap.dedent(
    """
    import torch


    def overhead(x):
        for _ in range(16):
            x = x * 1.0001 + 0.5
        return x


    def compute(a, b):
        return a @ b


    def threads(x):
        return (x * 2.0 + 1.0).sum()
    """
)

#: kind → (function, call expression, OMP_NUM_THREADS).
KINDS = {
    "overhead": ("overhead", "overhead(torch.randn(1))", "1"),
    "compute": ("compute", "compute(torch.randn(512, 512), torch.randn(512, 512))", "1"),
    "threads": ("threads", "threads(torch.randn(4 * 1024 * 1024))", "2"),
}
AGREE = 4


class Run(NamedTuple):
    verdict: str
    stable: bool
    median_us: float
    spread: float
    busy_share: float


def profile(file: Path, kind: str, budget: float) -> Run:
    function, call, threads = KINDS[kind]
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), "OMP_NUM_THREADS": threads}
    done = subprocess.run(
        [sys.executable, "-m", "torchscope", "profile", f"{file}::{function}", "--call", call,
         "--json", "-q", "--steps", "3", "--warmup", "2", "--timing-budget", str(budget)],
        cwd=file.parent, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{kind}: torchscope profile failed:\n{done.stderr}")
    data: dict[str, Any] = json.loads(done.stdout)
    machine = data.get("machine") or {}
    return Run(
        data["verdict"]["id"],
        bool(data["verdict"].get("stable", True)),
        float(data["timing"]["median_us"]),
        float(data["timing"]["spread"]),
        float(machine.get("busy_share", 0.0)),
    )


def judged(runs: list[Run]) -> tuple[str, int, bool]:
    """(the most common id, how many runs have it, the case passes)."""
    common, count = collections.Counter(r.verdict for r in runs).most_common(1)[0]
    others_unstable = all(not r.stable for r in runs if r.verdict != common)
    return common, count, count >= AGREE or others_unstable


def _us(value: float) -> str:
    return f"{value / 1000:.3g} ms" if value >= 1000 else f"{value:.3g} µs"


def row(kind: str, condition: str, runs: list[Run]) -> tuple[list[str], bool]:
    common, count, ok = judged(runs)
    ids = ", ".join(f"{i}×{n}" for i, n in collections.Counter(r.verdict for r in runs).items())
    differing = [r for r in runs if r.verdict != common]
    unstable = "-" if not differing else ("all" if all(not r.stable for r in differing) else "no")
    times = [r.median_us for r in runs]
    cells = [
        kind,
        condition,
        ids,
        f"{count}/{len(runs)}",
        unstable,
        f"{sum(not r.stable for r in runs)}/{len(runs)}",
        f"{_us(statistics.median(times))} ({_us(min(times))}–{_us(max(times))})",
        f"{statistics.median(r.spread for r in runs) * 100:.0f} %",
        f"{statistics.median(r.busy_share for r in runs) * 100:.0f} %",
        "ok" if ok else "FAIL",
    ]
    return cells, ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timing-budget", type=float, default=2.0)
    parser.add_argument("--kinds", default=",".join(KINDS), help="e.g. threads (default: all)")
    args = parser.parse_args()
    cpu = sorted(os.sched_getaffinity(0))[0]
    head = ["kind", "machine", "verdicts", "agree", "others unstable", "unstable",
            "median per call (min–max)", "spread", "busy"]  # fmt: skip
    head.append("")
    rows, all_ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "stability_kinds.py"
        file.write_text(FUNCTIONS, encoding="utf-8")
        for kind in args.kinds.split(","):
            for condition in ("quiet", "one core held"):
                print(f"[bench] {kind}, {condition}: {args.runs} runs", file=sys.stderr)
                if condition == "quiet":
                    runs = [profile(file, kind, args.timing_budget) for _ in range(args.runs)]
                else:
                    with core_held(cpu):
                        runs = [profile(file, kind, args.timing_budget) for _ in range(args.runs)]
                cells, ok = row(kind, condition, runs)
                rows.append(cells)
                all_ok &= ok
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for cells in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
    print(f"\n{'every case passes' if all_ok else 'a case FAILED'}: the verdict id agrees in "
          f">= {AGREE} of {args.runs} runs, or every differing run says stable: false")  # fmt: skip
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
