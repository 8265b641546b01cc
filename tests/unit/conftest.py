"""Fixtures for the analysis tests: real traces written by the real torch profiler, and a
builder for small hand-made Kineto traces.

Traces are recorded once per session (a few seconds on 2 cores) the way torchscope's worker
records them: ``schedule(wait=0, warmup=1, active=K, repeat=1)``, ``prof.step()`` per call,
``record_shapes=True``, optional ``torchscope:L<n>`` line markers around each statement.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
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


def profile_to(
    path: Path,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    *,
    active: int = 5,
    markers: bool | str = True,
) -> Path:
    """Profile ``fn(*args)`` like the worker's profile pass and export to ``path``.

    ``markers``: True wraps each call in ``record_function("torchscope:L12")`` (category
    ``user_annotation``); ``"fast"`` uses ``_RecordFunctionFast`` like the worker does on
    torch ≥ 2.2 (recorded as ``cpu_op``); False records no marker.
    """
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    mark: Any = record_function
    if markers == "fast":
        mark = torch._C._profiler._RecordFunctionFast

    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=active, repeat=1),
    ) as prof:
        for _ in range(active + 1):
            if markers:
                with mark("torchscope:L12"):
                    fn(*args)
            else:
                fn(*args)
            prof.step()
    prof.export_chrome_trace(str(path))
    del torch
    return path


def measure(fn: Callable[..., Any], args: tuple[Any, ...], calls: int = 50) -> dict[str, Any]:
    """Unprofiled timing like the worker's timing pass (cold call, steady calls, floor)."""
    torch = pytest.importorskip("torch")
    t0 = time.perf_counter()
    fn(*args)
    cold = (time.perf_counter() - t0) * 1e6
    for _ in range(3):
        fn(*args)
    call_us = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(*args)
        call_us.append((time.perf_counter() - t0) * 1e6)
    one = torch.ones(1)
    floor = []
    for _ in range(200):
        t0 = time.perf_counter()
        torch.add(one, one)
        floor.append((time.perf_counter() - t0) * 1e6)
    return {"cold_us": cold, "call_us": call_us, "dispatch_floor_us": statistics.median(floor)}


def guide_fn(x: Any, w: Any, b: Any) -> Any:
    """The guide's function: one matmul and one add, two top-level ops per call."""
    import torch

    return torch.add(torch.matmul(x, w), b)


@pytest.fixture(scope="session")
def cpu_traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Traces and measurements of ``guide_fn`` at 8×8 and 512×512 on the CPU."""
    torch = pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("cpu_traces")
    torch.manual_seed(0)
    out: dict[str, Any] = {}
    for n in (8, 512):
        args = (torch.randn(n, n), torch.randn(n, n), torch.randn(n))
        out[f"fn{n}"] = profile_to(folder / f"fn{n}.json.gz", guide_fn, args)
        out[f"fn{n}_measured"] = measure(guide_fn, args, calls=50 if n == 8 else 10)
    out["fn8_fast"] = profile_to(
        folder / "fn8_fast.json.gz",
        guide_fn,
        (torch.randn(8, 8), torch.randn(8, 8), torch.randn(8)),
        markers="fast",
    )
    out["fn8_plain"] = profile_to(
        folder / "fn8_plain.json",
        guide_fn,
        (torch.randn(8, 8), torch.randn(8, 8), torch.randn(8)),
        markers=False,
    )
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
