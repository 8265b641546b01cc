"""Re-record the compiled traces and kernel provenance ``tests/unit/test_compiled_lines.py``
reads: ``head`` and ``breaks`` of tests/fixtures/workspace/compile_samples.py at 64×64,
compiled and profiled the way the compare job's profiled pass does it
(``worker/kernel_provenance.py``'s switches, ``worker/profiling.profile_calls``), with each
run's ``KernelSource`` list beside its trace (lines relative to the function's ``def``).

The files are committed so the unit tier sees fixed data; re-record when Inductor's kernel
names or the profiler's output change (a new torch), and check the unit tier still passes:

    OMP_NUM_THREADS=1 .venv/bin/python tests/data/compiled/record.py

``h200_addmm_4096.json.gz`` is not recorded here: it is the compiled side's trace of
``profile examples/matmul_add.py::fn --compare-compile`` at 4096×4096 on CUDA, taken on a lent
H200 (torch 2.11.0+cu130) by the compare job itself (its ``compiled.trace_path``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path[:0] = [str(REPO / "server"), str(REPO / "tests" / "fixtures" / "workspace")]

import compile_samples  # noqa: E402
import torch  # noqa: E402

from torchscope.worker.kernel_provenance import (  # noqa: E402
    catch_graph_breaks,
    kernel_sources,
    live_graphs,
    provenance_switches,
)
from torchscope.worker.profiling import profile_calls  # noqa: E402


def record(name: str) -> None:
    fn = getattr(compile_samples, name)
    def_line = fn.__code__.co_firstlineno
    x, w = torch.randn(64, 64), torch.randn(64, 64)
    with tempfile.TemporaryDirectory() as folder, provenance_switches(folder):
        earlier = live_graphs()
        with catch_graph_breaks() as breaks:
            torch._dynamo.reset()
            compiled = torch.compile(fn)
            for _ in range(3):
                compiled(x, w)
        profile_calls(lambda: compiled(x, w), 3, False, str(HERE / f"{name}.json.gz"))
    sources = [dataclasses.asdict(s) for s in kernel_sources(compile_samples.__file__, earlier)]
    for source in sources:
        source["lines"] = [line - def_line for line in source["lines"]]
    sites = [{**dataclasses.asdict(b), "line": b.line - def_line, "file": ""} for b in breaks]
    out = {"sources": sources, "breaks": sites}
    (HERE / f"{name}_sources.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    for which in ("head", "breaks"):
        record(which)
