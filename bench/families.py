"""Does the verdict agree with an independent oracle on every model family? (issue 55)

For each target of the family corpus (``tests/fixtures/workspace/families``: eight families,
each forward and its AdamW training step), run ``torchscope profile FILE::FN --json`` in a
fresh process and, right after, the oracle of ``tests/worker/family_oracle.py`` on the same
call in this process (``torch.utils.benchmark`` at 1 and 2 threads, ``FlopCounterMode``'s
FLOPs against the measured peak, dispatched ops × the cost of one; its docstring defines the
classes). Two conditions:

- **1 thread**: ``OMP_NUM_THREADS=1`` for the profile, the oracle judged at 1 thread;
- **2 threads, a core held**: ``OMP_NUM_THREADS=2``, with a busy loop pinned to the first CPU
  (``tests/core_holder.core_held``) during both the profile and the oracle.

Prints ``family | threads | verdict | stable | oracle | agree``; ``agree`` is ``yes`` when the
verdict's class is one the oracle allows, ``unstable`` when it is not but the oracle is noisier
than its ``NOISE`` and the verdict says ``stable: false``, else ``no``. Exits 1 when a 1-thread
row disagrees, or a 2-thread row disagrees and says ``stable: true``
(the issue's acceptance).

    .venv/bin/python bench/families.py [--only mlp,lstm] [--conditions 1,2held]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from tests.core_holder import core_held  # noqa: E402
from tests.worker.family_oracle import (  # noqa: E402
    agrees,
    directive_call,
    measure,
    targets,
    verdict_class,
)

CONDITIONS = {"1": (1, False), "2held": (2, True)}


def profile(path: Path, qualname: str, threads: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-m", "torchscope", "profile", f"{path.name}::{qualname}", "--json",
         "-q", "--steps", "3", "--warmup", "2", "--timing-budget", "1"],
        cwd=path.parent, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{path.name}::{qualname}: torchscope profile failed:\n{done.stderr}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def row(name: str, condition: str) -> tuple[list[str], bool]:
    path, qualname = targets()[name]
    threads, held = CONDITIONS[condition]
    cpu = sorted(os.sched_getaffinity(0))[0]
    with core_held(cpu) if held else contextlib.nullcontext():
        verdict = profile(path, qualname, threads)["verdict"]
        oracle = measure(directive_call(path, qualname), threads=threads)
    ok = agrees(oracle, verdict)
    label = f"{threads}" + (", core held" if held else "")
    stable = "true" if verdict["stable"] else "false"
    cells = [name, label, f"{verdict['id']} ({verdict_class(verdict)})", stable, oracle.label()]
    passed = ok or (threads > 1 and not verdict["stable"])
    # "yes": the class is one the oracle allows; "unstable": it is not, but both the oracle
    # (noisier than NOISE) and the verdict (stable: false) say they cannot be trusted.
    said = "yes" if verdict_class(verdict) in oracle.classes() else "unstable" if ok else "no"
    return [*cells, said], passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated targets (default: all)")
    parser.add_argument("--conditions", default="1,2held", help="1 and/or 2held")
    args = parser.parse_args()
    names = [n for n in targets() if not args.only or n.split("/")[0] in args.only.split(",")]
    print("| family | threads | verdict | stable | oracle | agree |")
    print("|---|---|---|---|---|---|")
    failed = 0
    for condition in args.conditions.split(","):
        for name in names:
            cells, passed = row(name, condition)
            failed += not passed
            print("| " + " | ".join(cells) + " |", flush=True)
    load = os.getloadavg()[0]
    print(f"\n{failed} failing rows; load average {load:.1f} on {os.cpu_count()} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
