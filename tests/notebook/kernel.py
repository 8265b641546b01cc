"""A real Jupyter kernel for the notebook tests: ipykernel launched from this venv's Python
(a kernelspec written to a temporary ``JUPYTER_PATH``), driven by ``nbclient``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

KERNEL_NAME = "torchscope-test"


def install_kernelspec(root: Path) -> dict[str, str]:
    """A kernelspec running ``sys.executable -m ipykernel_launcher``; returns the environment
    that finds it and keeps the kernel's verdicts about the math: one intra-op thread, and
    glibc's heap at fixed thresholds (the settings of the compare passes' ``steady_allocator``).

    Without fixed thresholds the kernel's heap state decides whether ``fn(*big)``'s two 4 MiB
    results are given back to the system after each call: in one run of five the kernel
    trimmed its heap every call, and the profile rightly read ``overhead-bound (CPU page
    faults): 2016 page faults per call ≈ 13.1 ms (54 %)``. That answer is the product
    measuring a real cost (``test_analysis_cpu.py::test_page_faults_that_cost_most_make_the_verdict``); these tests
    are about the verdict on the math, so the heap is held steady."""
    spec = root / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "torchscope test",
                "language": "python",
            }
        )
    )
    return {
        "JUPYTER_PATH": str(root),
        "OMP_NUM_THREADS": "1",
        "MALLOC_MMAP_THRESHOLD_": str(32 << 20),  # glibc's own dynamic ceiling, fixed
        "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1),  # never give the heap top back
        # Any free port for the Perfetto link: other tests may hold 9001.
        "TORCHSCOPE_PERFETTO_PORT": "0",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def code_cell(source: str) -> Any:
    import nbformat

    return nbformat.v4.new_code_cell(source)


def notebook(cells: list[str]) -> Any:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {
        "name": KERNEL_NAME,
        "display_name": "torchscope test",
        "language": "python",
    }
    return nb


def outputs_of(cell: Any) -> dict[str, Any]:
    """The cell's display data merged (``text/html``, ``text/plain``, the JSON bundle), its
    stream text under ``stdout``/``stderr`` and an error's name under ``error``."""
    merged: dict[str, Any] = {"stdout": "", "stderr": ""}
    for out in cell.get("outputs", []):
        if out["output_type"] in ("display_data", "execute_result"):
            merged.update(out["data"])
        elif out["output_type"] == "stream":
            merged[out["name"]] += out["text"]
        elif out["output_type"] == "error":
            merged["error"] = out["ename"]
            merged["traceback"] = "\n".join(out["traceback"])
    return merged


def environment(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
