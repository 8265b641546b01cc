"""What the memory pass costs: the profiled pass with ``profile_memory=True`` vs without.

On every example function (line-marked, as the worker profiles it), in alternating rounds in
the same run: K profiled calls plus the trace export (the worker's profile pass) and the
analysis of the exported trace, with and without the memory events. Target: ≤ 1.5× per example.

    .venv/bin/python bench/memory_overhead.py [--rounds N]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO / "examples"))

import torch  # noqa: E402

from torchscope.analysis import analyze_trace  # noqa: E402
from torchscope.worker.line_markers import instrument  # noqa: E402
from torchscope.worker.profiling import profile_calls  # noqa: E402

EXAMPLES: list[tuple[str, str, Callable[[], tuple[Any, ...]]]] = [
    ("matmul_add", "fn", lambda: (torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))),
    (
        "matmul_add",
        "fn",
        lambda: (torch.randn(1024, 1024), torch.randn(1024, 1024), torch.randn(1024, 1024)),
    ),
    (
        "lines",
        "hot_and_cold",
        lambda: (torch.randn(512, 512), torch.randn(512, 512), torch.randn(4)),
    ),
    ("lines", "loop", lambda: (torch.randn(64, 64), 4)),
    ("lines", "early_return", lambda: (torch.randn(256, 256),)),
    ("lines", "calls_helper", lambda: (torch.randn(256, 256),)),
]

STEPS = 5


def one_pass(invoke: Callable[[], Any], memory: bool, path: str) -> float:
    start = time.perf_counter()
    profile_calls(invoke, STEPS, False, path, "bench", profile_memory=memory)
    analyze_trace(path)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "trace.json.gz")
        for module_name, name, make in EXAMPLES:
            marked = instrument(getattr(importlib.import_module(module_name), name))
            args = make()

            def invoke(marked: Any = marked, args: tuple[Any, ...] = args) -> Any:
                return marked(*args)

            one_pass(invoke, True, path)  # warm both paths up
            plain: list[float] = []
            memory: list[float] = []
            for _ in range(rounds):
                plain.append(one_pass(invoke, False, path))
                memory.append(one_pass(invoke, True, path))
            ratios = [m / p for m, p in zip(memory, plain)]
            ratio = statistics.median(ratios)
            worst = max(worst, ratio)
            shape = "×".join(str(tuple(a.shape)) for a in args if hasattr(a, "shape"))[:40]
            print(
                f"{module_name}.{name} {shape:<40} plain {statistics.median(plain) * 1e3:7.1f} ms"
                f"  memory {statistics.median(memory) * 1e3:7.1f} ms  ratio {ratio:.2f}× "
                f"(rounds {', '.join(f'{r:.2f}' for r in ratios)})"
            )
    print(f"worst ratio {worst:.2f}× (target ≤ 1.5×)")
    return 0 if worst <= 1.5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
