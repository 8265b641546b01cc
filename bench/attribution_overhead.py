"""What the per-line markers cost: per-call time of the marked copy vs the original.

Measured in the same run, alternating rounds, on two functions: 20 statements of tiny ops (the
worst case: one marker per microsecond-scale op) and the 512×512 matmul of examples/lines.py
(the common case: markers are noise next to real work). Both are measured without the
profiler (the markers' own cost) and under ``torch.profiler`` (what the attribution pass
pays). Targets: ≤ 1.5× on the small-op function, ≤ 1.05× on the matmul.

    .venv/bin/python bench/attribution_overhead.py
"""

from __future__ import annotations

import statistics
import sys
import textwrap
import time
import types
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from torchscope.worker.line_markers import instrument  # noqa: E402

SMALL_OPS = (
    "def small_ops(x):\n"
    + "".join(f"    x = x {'+' if i % 2 else '*'} {i + 1}\n" for i in range(20))
    + "    return x\n"
)

MATMUL = textwrap.dedent(
    """
    def matmul(a, b, small):
        product = a @ b
        bump = small + 1
        return product, bump
    """
)

TARGETS = {"small_ops": 1.5, "matmul": 1.05}


def load(source: str, name: str, folder: Path) -> Callable[..., Any]:
    path = folder / f"bench_{name}.py"
    path.write_text(source)
    module = types.ModuleType(f"bench_{name}")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module.__dict__[name]  # type: ignore[no-any-return]


def per_call_us(fn: Callable[..., Any], args: tuple[Any, ...], seconds: float) -> float:
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn(*args)
        calls += 1
    return (time.perf_counter() - start) * 1e6 / calls


def compare(
    original: Callable[..., Any], marked: Callable[..., Any], args: tuple[Any, ...], profiled: bool
) -> tuple[float, float, float]:
    """Median per-call times (original, marked) over alternating rounds, and their ratio."""
    seconds = 0.2
    originals, markeds = [], []
    for _ in range(7):
        if profiled:
            with profile(activities=[ProfilerActivity.CPU]):
                originals.append(per_call_us(original, args, seconds))
            with profile(activities=[ProfilerActivity.CPU]):
                markeds.append(per_call_us(marked, args, seconds))
        else:
            originals.append(per_call_us(original, args, seconds))
            markeds.append(per_call_us(marked, args, seconds))
    o, m = statistics.median(originals), statistics.median(markeds)
    return o, m, m / o


def main() -> int:
    import tempfile

    torch.set_num_threads(max(1, torch.get_num_threads()))
    folder = Path(tempfile.mkdtemp(prefix="torchscope-bench-"))
    cases = {
        "small_ops": (load(SMALL_OPS, "small_ops", folder), (torch.ones(4),)),
        "matmul": (
            load(MATMUL, "matmul", folder),
            (torch.randn(512, 512), torch.randn(512, 512), torch.randn(4)),
        ),
    }
    failed = False
    print(
        f"{'function':<10} {'mode':<10} {'original':>10} {'marked':>10} {'ratio':>7} {'target':>7}"
    )
    for name, (fn, args) in cases.items():
        marked = instrument(fn)
        for _ in range(3):
            fn(*args)
            marked(*args)
        for profiled in (False, True):
            o, m, ratio = compare(fn, marked, args, profiled)
            mode = "profiled" if profiled else "plain"
            ok = ratio <= TARGETS[name] if profiled else True
            failed = failed or not ok
            print(
                f"{name:<10} {mode:<10} {o:>8.1f}µs {m:>8.1f}µs {ratio:>6.2f}× "
                f"{'≤' + str(TARGETS[name]) + '×' if profiled else '':>7}{'' if ok else '  MISSED'}"
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
