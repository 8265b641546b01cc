"""Fixtures for the analysis tests: real traces written by the real torch profiler (recorded
once and committed under ``tests/data/cpu``, see its ``record.py``), and a builder for small
hand-made Kineto traces.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

_SERVER = Path(__file__).resolve().parents[2] / "server"
if importlib.util.find_spec("torchscope") is None and _SERVER.is_dir():
    sys.path.insert(0, str(_SERVER))


SHARED_TRACES = Path(__file__).resolve().parents[2] / "tests" / "data" / "traces"


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The folder of real GPU traces vendored in ``tests/data/traces`` (see its SOURCES.md)."""
    assert SHARED_TRACES.is_dir(), f"vendored traces missing: {SHARED_TRACES}"
    return SHARED_TRACES


CPU_TRACES = Path(__file__).resolve().parents[1] / "data" / "cpu"


@pytest.fixture(scope="session")
def cpu_traces() -> dict[str, Any]:
    """Traces and measurements of the guide's function (``torch.add(torch.matmul(x, w), b)``)
    at 8×8 and 512×512 on the CPU, recorded once by the real torch profiler and committed
    (``tests/data/cpu/record.py`` re-records them): the unit tier analyses fixed data, so
    its answers do not move with this machine's load (issue 31)."""
    out: dict[str, Any] = {}
    for name in ("fn8", "fn512", "fn8_fast"):
        out[name] = CPU_TRACES / f"{name}.json.gz"
    out["fn8_plain"] = CPU_TRACES / "fn8_plain.json"
    for n in (8, 512):
        out[f"fn{n}_measured"] = json.loads((CPU_TRACES / f"fn{n}_measured.json").read_text())
    missing = [str(p) for p in out.values() if isinstance(p, Path) and not p.is_file()]
    assert not missing, f"committed CPU traces missing: {missing}"
    return out


# -- hand-built Kineto traces ----------------------------------------------------------------
# Small traces shaped exactly like torch.profiler's output (categories, correlation and
# External id links, deviceProperties), for the rule and verdict tests: each test writes the
# handful of events that make a rule fire (or not) and runs the real analyze_trace on the file.

CPU_PID = 100
CPU_TID = 100
DEVICE = 0
STREAM = 7

A100 = {
    "id": 0,
    "name": "NVIDIA A100-SXM4-80GB",
    "major": 8,
    "minor": 0,
    "multiProcessorCount": 108,
}
V100 = {"id": 0, "name": "Tesla V100-SXM2-16GB", "major": 7, "minor": 0, "multiProcessorCount": 80}


class KinetoBuilder:
    """Collects events; ``write`` puts them in a ``.json`` or ``.json.gz`` file."""

    def __init__(self, device: dict[str, Any] | None = None, *, gpu: bool = True) -> None:
        self.events: list[dict[str, Any]] = [
            {
                "ph": "M",
                "name": "process_name",
                "pid": CPU_PID,
                "tid": 0,
                "args": {"name": "python"},
            },
            {
                "ph": "M",
                "name": "thread_name",
                "pid": CPU_PID,
                "tid": CPU_TID,
                "args": {"name": "thread 100 (python)"},
            },
        ]
        self.meta: dict[str, Any] = {
            "schemaVersion": 1,
            "deviceProperties": [device or A100] if gpu else [],
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        }
        self._corr = 1000
        self._ext = 1

    def _x(
        self, cat: str, name: str, ts: float, dur: float, pid: Any, tid: Any, args: dict[str, Any]
    ) -> dict[str, Any]:
        ev = {
            "ph": "X",
            "cat": cat,
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": ts,
            "dur": dur,
            "args": args,
        }
        self.events.append(ev)
        return ev

    def step(self, n: int, ts: float, dur: float) -> None:
        self.annotation(f"ProfilerStep#{n}", ts, dur)

    def annotation(self, name: str, ts: float, dur: float, tid: int = CPU_TID) -> None:
        self._ext += 1
        self._x("user_annotation", name, ts, dur, CPU_PID, tid, {"External id": self._ext})

    def op(self, name: str, ts: float, dur: float, tid: int = CPU_TID, **args: Any) -> int:
        self._ext += 1
        self._x("cpu_op", name, ts, dur, CPU_PID, tid, {"External id": self._ext, **args})
        return self._ext

    def python(self, frame: str, ts: float, dur: float) -> None:
        self._x("python_function", frame, ts, dur, CPU_PID, CPU_TID, {})

    def runtime(self, name: str, ts: float, dur: float, tid: int = CPU_TID) -> int:
        self._corr += 1
        self._x(
            "cuda_runtime",
            name,
            ts,
            dur,
            CPU_PID,
            tid,
            {"correlation": self._corr, "External id": self._ext},
        )
        return self._corr

    def kernel(
        self,
        name: str,
        ts: float,
        dur: float,
        corr: int,
        stream: int = STREAM,
        device: int = DEVICE,
    ) -> None:
        self._x(
            "kernel",
            name,
            ts,
            dur,
            device,
            stream,
            {"device": device, "stream": stream, "correlation": corr, "External id": self._ext},
        )
        self.events.append(
            {
                "ph": "f",
                "id": corr,
                "pid": device,
                "tid": stream,
                "ts": ts,
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )

    def launch(
        self,
        ts: float,
        dur: float,
        kernel: str,
        kts: float,
        kdur: float,
        call: str = "cudaLaunchKernel",
        stream: int = STREAM,
    ) -> None:
        corr = self.runtime(call, ts, dur)
        self.kernel(kernel, kts, kdur, corr, stream)

    def copy(
        self,
        ts: float,
        dur: float,
        copy: str,
        kts: float,
        kdur: float,
        nbytes: int,
        call: str = "cudaMemcpyAsync",
    ) -> None:
        corr = self.runtime(call, ts, dur)
        self._x(
            "gpu_memcpy",
            copy,
            kts,
            kdur,
            DEVICE,
            STREAM,
            {"device": DEVICE, "stream": STREAM, "correlation": corr, "bytes": nbytes},
        )

    def overhead(self, name: str, ts: float, dur: float) -> None:
        self._x("overhead", name, ts, dur, -1, 0, {})

    def doc(self) -> dict[str, Any]:
        end = max((e["ts"] + e.get("dur", 0) for e in self.events if e["ph"] == "X"), default=0.0)
        start = min((e["ts"] for e in self.events if e["ph"] == "X"), default=0.0)
        span = {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": start - 10,
            "dur": end - start + 20,
            "args": {"Op count": 0},
        }
        return {**self.meta, "traceEvents": [*self.events, span]}

    def write(self, path: Path) -> Path:
        data = json.dumps(self.doc()).encode()
        path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
        return path


@pytest.fixture
def kineto() -> type[KinetoBuilder]:
    """The hand-built trace builder class (``kineto()`` for an A100, ``kineto(V100)``…)."""
    return KinetoBuilder
