"""``torchscope calibrate``: measure this machine's peaks again, in the target interpreter.

Runs ``python -m torchscope.worker.calibrate --force`` in that interpreter (the one profiles
run in: its torch, its threads, its device), which overwrites the cached peaks the next
profiles read, and prints them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchscope.cli.common import Commands


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    calibrate = commands.add_parser(
        "calibrate",
        help="measure this machine's peak matmul FLOP/s and copy bandwidth again",
        description="Measure the peaks efficiencies are set against (a large GEMM per dtype "
        "with all intra-op threads, a large copy) and cache them for later profiles.",
    )
    calibrate.add_argument("--python", default=sys.executable, help="interpreter with torch")
    calibrate.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    calibrate.add_argument(
        "dtypes", nargs="*", default=[], help="extra dtypes, e.g. bfloat16 (float32 always)"
    )
    calibrate.add_argument("--json", action="store_true", help="print the peaks as JSON")
    return calibrate


def run(args: argparse.Namespace) -> int:
    from torchscope.host.worker_process import PACKAGE_PARENT

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    command = [args.python, "-m", "torchscope.worker.calibrate", "--force"]
    command += ["--device", args.device, *args.dtypes]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    except OSError as exc:
        print(f"torchscope: cannot run {args.python!r}: {exc} — pass --python", file=sys.stderr)
        return 1
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        print(f"torchscope: calibration failed in {args.python}:\n{done.stderr}", file=sys.stderr)
        return 1
    peaks = json.loads(lines[-1])
    if args.json:
        print(json.dumps(peaks))
        return 0
    name = peaks.get("name")  # the CPU or GPU as profile and analyze name it
    label = f"{name} ({peaks['device']})" if name else peaks["device"]
    print(f"peaks of {label} (measured):")
    for dtype, gflops in peaks["matmul_gflops"].items():
        print(f"  matmul {dtype}: {gflops:.3g} GFLOP/s")
    if peaks.get("bandwidth_gbps"):
        print(f"  copy bandwidth: {peaks['bandwidth_gbps']:.3g} GB/s")
    return 0
