"""How long does ``torchscope fix FILE::FUNCTION --list`` take in a fresh process? (issue 39)

``--list`` reads the source only: it starts no worker and imports no torch, so it should cost
what the CLI's own start costs. Each run is a fresh process, timed from start to exit; the
kinds run interleaved in rounds (``--repeat``), so each round sees the same machine load:

- **python**: ``python -c pass`` (the interpreter's start, the floor);
- **help**: ``python -m torchscope --help`` (the CLI's start);
- **list**: ``python -m torchscope fix tests/fixtures/workspace/fix_corpus.py::
  CausalSelfAttention.forward --list`` (both fixes it offers found and printed): before issue
  39 it asked a worker for the device (6.7 s on a CPU-only torch, 0.7 s with ``--device cpu``);
  it runs at the default ``--device auto``: no device question is asked, so there is no
  separate ``--device cpu`` row.

Prints medians and min–max over the rounds, the ratios list ÷ help and list ÷ python, and the
target: list under 1 s (met / NOT met). A torch import in the listing process fails the run.

    .venv/bin/python bench/fix_list.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 1.0
TARGET = f"{REPO / 'tests/fixtures/workspace/fix_corpus.py'}::CausalSelfAttention.forward"
PROBE = (
    "import runpy, sys\n"
    "sys.argv = ['torchscope', 'fix', sys.argv[1], '--list']\n"
    "try:\n    runpy.run_module('torchscope', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "assert 'torch' not in sys.modules, 'fix --list imported torch'\n"
)
KINDS: dict[str, list[str]] = {
    "python": [sys.executable, "-c", "pass"],
    "help": [sys.executable, "-m", "torchscope", "--help"],
    "list": [sys.executable, "-m", "torchscope", "fix", TARGET, "--list"],
}


def _run(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    _run([sys.executable, "-c", PROBE, TARGET])  # no torch in the listing process
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for round_ in range(args.repeat):
        order = list(KINDS) if round_ % 2 == 0 else list(reversed(KINDS))
        for kind in order:
            times[kind].append(_run(KINDS[kind]))
    med = {kind: statistics.median(values) for kind, values in times.items()}
    for kind, values in times.items():
        print(f"{kind:<8} median {med[kind] * 1e3:7.1f} ms  (min {min(values) * 1e3:.1f}, "
              f"max {max(values) * 1e3:.1f}, {len(values)} runs)")  # fmt: skip
    print(f"list ÷ help   {med['list'] / med['help']:.2f}×")
    print(f"list ÷ python {med['list'] / med['python']:.2f}×")
    met = med["list"] < TARGET_S
    verdict = "met" if met else "NOT met"
    print(f"target: fix --list under {TARGET_S:g} s in a fresh process — {verdict}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
