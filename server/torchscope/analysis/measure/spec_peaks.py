"""Vendor spec-sheet peaks by device name: only for traces recorded on another machine.

On the machine that runs the profile, peaks are measured (``worker/calibrate.py``); a trace
read by ``torchscope analyze`` has no such measurement, so a GEMM's achieved TFLOP/s is set
against the datasheet of the GPU the trace names, and the report says "spec-sheet peak".
Numbers are dense (no structured sparsity) tensor-core peaks where the dtype has them, in
GFLOP/s, and HBM bandwidth in GB/s, from NVIDIA's/AMD's datasheets (SXM parts unless named).
"""

from __future__ import annotations

from ..results import Peaks

_T = 1000.0  # GFLOP/s per TFLOP/s

#: (name fragment, {dtype: GFLOP/s}, GB/s); the first fragment found in the name wins, so
#: longer names come first.
SPEC_SHEET: list[tuple[str, dict[str, float], float]] = [
    ("H100 PCIe", {"float32": 51 * _T, "tfloat32": 378 * _T, "bfloat16": 756 * _T,
                   "float16": 756 * _T, "float64": 51 * _T}, 2000.0),
    ("H200", {"float32": 67 * _T, "tfloat32": 495 * _T, "bfloat16": 989 * _T,
              "float16": 989 * _T, "float64": 67 * _T}, 4800.0),
    ("H100", {"float32": 67 * _T, "tfloat32": 495 * _T, "bfloat16": 989 * _T,
              "float16": 989 * _T, "float64": 67 * _T}, 3350.0),
    ("A100-SXM4-80GB", {"float32": 19.5 * _T, "tfloat32": 156 * _T, "bfloat16": 312 * _T,
                        "float16": 312 * _T, "float64": 19.5 * _T}, 2039.0),
    ("A100", {"float32": 19.5 * _T, "tfloat32": 156 * _T, "bfloat16": 312 * _T,
              "float16": 312 * _T, "float64": 19.5 * _T}, 1555.0),
    ("A10", {"float32": 31.2 * _T, "tfloat32": 62.5 * _T, "bfloat16": 125 * _T,
             "float16": 125 * _T}, 600.0),
    ("L40S", {"float32": 91.6 * _T, "tfloat32": 183 * _T, "bfloat16": 362 * _T,
              "float16": 362 * _T}, 864.0),
    ("L4", {"float32": 30.3 * _T, "tfloat32": 60 * _T, "bfloat16": 121 * _T,
            "float16": 121 * _T}, 300.0),
    ("V100", {"float32": 15.7 * _T, "float16": 125 * _T, "float64": 7.8 * _T}, 900.0),
    ("T4", {"float32": 8.1 * _T, "float16": 65 * _T}, 320.0),
    ("P100", {"float32": 10.6 * _T, "float16": 21.2 * _T, "float64": 5.3 * _T}, 732.0),
    ("GP100", {"float32": 10.3 * _T, "float16": 20.7 * _T, "float64": 5.2 * _T}, 717.0),
    ("MI300X", {"float32": 163.4 * _T, "tfloat32": 653.7 * _T, "bfloat16": 1307 * _T,
                "float16": 1307 * _T, "float64": 81.7 * _T}, 5300.0),
    ("MI250X", {"float32": 47.9 * _T, "bfloat16": 383 * _T, "float16": 383 * _T,
                "float64": 47.9 * _T}, 3277.0),
]  # fmt: skip


def spec_sheet_peaks(device_name: str) -> Peaks | None:
    """The datasheet peaks of the named GPU, or None when it is not in the table."""
    for fragment, gflops, gbps in SPEC_SHEET:
        if fragment.lower() in device_name.lower():
            return Peaks(dict(gflops), gbps, "spec-sheet", device_name)
    return None
