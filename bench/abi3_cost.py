"""What does the stable ABI (abi3) cost the native reader? ``torchscope analyze TRACE`` with
three builds of the reader, each a fresh process, in interleaved rounds:

- **before**: the reader of ``--before`` (default ``54aec34``, before issue 53: static types,
  CPython's macros), built for this interpreter;
- **per-version**: today's sources (heap types from ``PyType_FromSpec``) built for this
  interpreter alone, as pip and the 3.9/3.10 release builds do;
- **abi3**: today's sources with ``Py_LIMITED_API=0x030B0000``, the one build the release
  ships for CPython 3.11 and later (checked calls in place of the macros, ``_native_compat.h``).

The rest of the package is today's in all three. Their stdout must be the same; prints the
medians and the ratios to **before**. Needs a C compiler (``cc``) and git.

    .venv/bin/python bench/abi3_cost.py [TRACE] [--repeat 7] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
INGEST = "server/torchscope/ingest"
DEFAULT_TRACE = REPO / "tests" / "data" / "traces" / "hta_ddp_v100_rank1.json.gz"
FLAGS = ["-O3", "-DNDEBUG", "-fwrapv", "-fno-strict-aliasing", "-fPIC", "-shared"]


def _sources(rev: str | None, into: Path) -> list[Path]:
    """The reader's C sources and headers, of ``rev`` (git) or of the checkout, in ``into``."""
    into.mkdir(parents=True)
    if rev is None:
        for path in (REPO / INGEST).glob("_native*.[ch]"):
            shutil.copy(path, into / path.name)
    else:
        listing = ["git", "-C", str(REPO), "ls-tree", "--name-only", rev, f"{INGEST}/"]
        names = subprocess.run(listing, capture_output=True, text=True, check=True).stdout.split()
        for name in (n for n in names if n.rsplit("/", 1)[-1].startswith("_native")):
            if name.endswith((".c", ".h")):
                text = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:{name}"],
                                      capture_output=True, check=True).stdout  # fmt: skip
                (into / name.rsplit("/", 1)[-1]).write_bytes(text)
    return sorted(into.glob("*.c"))


def build(tree: Path, rev: str | None, limited: bool) -> None:
    """A copy of server/ in ``tree`` with the reader of ``rev`` built in place."""
    shutil.copytree(REPO / "server", tree, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    sources = _sources(rev, tree.parent / f"{tree.name}-src")
    suffix = ".abi3.so" if limited else sysconfig.get_config_var("EXT_SUFFIX")
    extra = ["-DPy_LIMITED_API=0x030B0000"] if limited else []
    out = tree / "torchscope" / "ingest" / f"_native{suffix}"
    include = sysconfig.get_paths()["include"]
    cmd = ["cc", *FLAGS, *extra, f"-I{include}", *map(str, sources), "-o", str(out)]
    subprocess.run(cmd, check=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(tree: Path, trace: Path) -> tuple[float, float, str]:
    """One ``torchscope analyze``: its wall time, its CPU time (user + system, what a loaded
    machine disturbs less) and its stdout."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "torchscope", "analyze", str(trace)], env=env,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return time.perf_counter() - start, _children_cpu() - cpu, done.stdout


def _loads_native(tree: Path) -> None:
    probe = "import torchscope.ingest.accel as a; assert a.native is not None"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, "-c", probe], env=env, check=True)


def _report(name: str, values: list[float], base: list[float], unit: str) -> None:
    ratios = [v / b for v, b in zip(values, base)]
    print(f"{name:12s} {unit}: median {statistics.median(values):.3f} s (min {min(values):.3f}, "
          f"max {max(values):.3f}); / before: median {statistics.median(ratios):.3f}x "
          f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trace", nargs="?", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", default="54aec34")
    args = parser.parse_args()
    if sys.version_info < (3, 11):
        raise SystemExit("abi3_cost: the abi3 build needs CPython 3.11 or later")
    variants = {"before": (args.before, False), "per-version": (None, False), "abi3": (None, True)}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {name: Path(tmp) / name for name in variants}
        for name, (rev, limited) in variants.items():
            build(trees[name], rev, limited)
            _loads_native(trees[name])
        wall: dict[str, list[float]] = {name: [] for name in trees}
        cpu: dict[str, list[float]] = {name: [] for name in trees}
        outputs = set()
        for _ in range(args.repeat):
            for name, tree in trees.items():
                seconds, cpu_seconds, stdout = run(tree, args.trace)
                wall[name].append(seconds)
                cpu[name].append(cpu_seconds)
                outputs.add(stdout)
    assert len(outputs) == 1, "the builds printed different reports"
    for name in trees:
        _report(name, wall[name], wall["before"], "wall")
        _report(name, cpu[name], cpu["before"], "cpu ")
    print(f"{args.repeat} interleaved rounds, {args.trace.name}, same report")


if __name__ == "__main__":
    main()
