"""Do the three times of a real call agree? ``torchscope run``'s in-run per-call time (the
program's own calls, unprofiled), the replay of its capture (``torchscope profile`` with no call
expression) and ``torch.utils.benchmark`` on the same captured inputs at the same thread count.

The model is ``examples/real_inputs/train.py`` (``Attention.forward`` inside a training loop
over a DataLoader). Rounds interleave the three (run → replay → benchmark, on that round's
capture); every subprocess and the benchmark use ``OMP_NUM_THREADS`` threads (default 1: on a
shared machine a second thread waits for a busy core). Each round also checks that the captured
module on the captured inputs returns what the call returned in the run (``torch.allclose``).
Target: replay and benchmark within ±15 % of the in-run time (the median of the rounds'
ratios: each round's three times are measured back to back, on the same machine state).

    .venv/bin/python bench/real_inputs_agreement.py [--rounds 3] [--calls 8] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
SPEC = "train.py::Attention.forward"


def _torchscope(cwd: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "torchscope", args[0], "--json", "-q", *args[1:]],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"torchscope {' '.join(args)} failed:\n{done.stderr}")
    data: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return data


def _benchmark(work: Path, threads: int) -> tuple[float, bool]:
    """Median µs of ``torch.utils.benchmark`` on the capture, and whether the captured call's
    output is reproduced."""
    import torch
    import torch.utils.benchmark as benchmark

    from torchscope.worker.captures import read_capture

    sys.path.insert(0, str(work))
    try:
        import train  # type: ignore[import-not-found]

        capture = work / ".torchscope" / "inputs" / "train" / "Attention.forward.pt"
        saved = read_capture(str(capture), train, cuda=False)
        attention, x, mask = saved["args"]
        expected = torch.load(str(capture).replace(".pt", ".output.pt"), weights_only=False)
        same = torch.allclose(attention(x, mask), expected, atol=1e-6)
        timer = benchmark.Timer(
            "attention(x, mask)",
            globals={"attention": attention, "x": x, "mask": mask},
            num_threads=threads,
        )
        return timer.blocked_autorange(min_run_time=1.0).median * 1e6, same
    finally:
        sys.path.remove(str(work))
        sys.modules.pop("train", None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "server"),
        "OMP_NUM_THREADS": str(args.threads),
    }
    import torch

    torch.set_num_threads(args.threads)
    rows: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        shutil.copy(REPO / "examples" / "real_inputs" / "train.py", work / "train.py")
        traces = str(work / "traces")
        for round_ in range(args.rounds):
            run = _torchscope(
                work, env, "run", "--target", SPEC, "--calls", str(args.calls), "--capture",
                "--trace-dir", traces, "--", "python", "train.py", "--steps", "40",
            )  # fmt: skip
            in_run = statistics.median(run["run"]["in_run_us"])
            replay = _torchscope(work, env, "profile", SPEC, "--trace-dir", traces)
            assert replay["inputs"]["source"] == "capture", replay["inputs"]
            replayed = replay["timing"]["median_us"]
            bench_us, same = _benchmark(work, args.threads)
            rows.append((in_run, replayed, bench_us))
            print(
                f"round {round_ + 1}: in-run {in_run:8.1f} µs · replay {replayed:8.1f} µs "
                f"({replayed / in_run:.2f}×) · benchmark {bench_us:8.1f} µs "
                f"({bench_us / in_run:.2f}×) · output reproduced: {same}",
                flush=True,
            )
    replay_ratio = statistics.median(r / i for i, r, _ in rows)
    bench_ratio = statistics.median(b / i for i, _, b in rows)
    spread = [max(c) / min(c) for c in zip(*rows)]
    print(
        f"median of the rounds' ratios: replay {replay_ratio:.2f}×, benchmark "
        f"{bench_ratio:.2f}× the in-run time (target 0.85–1.15×); round-to-round spread of "
        f"each time: in-run {spread[0]:.2f}×, replay {spread[1]:.2f}×, benchmark {spread[2]:.2f}×"
    )

if __name__ == "__main__":
    main()
