"""An independent recomputation of a trace's step numbers, straight from the Kineto JSON.

Standard library only, and nothing of ``torchscope``: ``test_oracle.py`` holds the analysis
to these numbers (issue 29). What it computes, per step:

- the step windows: ``ProfilerStep#N`` annotations (clipped to the recording's ``Trace``
  span), else iterations ending where ``Optimizer.step#`` ends, else the measured
  ``[param|…|measure|…]`` passes, else the whole trace;
- device work by launch: every kernel, memcpy and memset belongs to the step whose runtime
  call (same ``correlation``) started inside the step's window; without one, the CPU op with
  the same ``External id``; without either, where the device span started;
- ``kernel_us``: the kernels' summed duration; ``busy_us``: the union of the device spans;
  per kernel name, its summed duration in each step (the top-kernels table); the launch
  delays (kernel start minus its runtime call's start) of the kernels a step launched;
- the span: from the CPU start (or where the previous step's span ended, if later) to the
  later of the CPU end and the last device end; ``busy_share = min(1, busy_us / span)``;
- hidden communication: per step window, the union of NCCL kernels (else of the backends'
  CPU-side collective ranges), the part of it under non-communication kernels, summed over
  the steps.
"""

from __future__ import annotations

import gzip
import json
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path
from typing import Any

RUNTIME = {"cuda_runtime", "Runtime", "runtime", "cuda_driver", "xpu_runtime"}
DEVICE = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
KERNEL = {"kernel", "Kernel"}
CPU_NAMED = {"user_annotation", "Operator", "operator", "cpu_op"}
ACTIVITY = CPU_NAMED | RUNTIME | DEVICE | {"python_function"}
COMM = (
    *("nccl", "rccl", "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter"),
    *("all_to_all", "alltoall", "sendrecv"),
)
BACKENDS = ("gloo:", "nccl:", "mpi:", "ucc:", "xccl:")
"""CPU-side collective ranges: the communication of a trace without NCCL kernels."""


@lru_cache(maxsize=1)  # one trace at a time: the largest is 54 MB of JSON
def events(path: Path) -> list[dict[str, Any]]:
    """The complete (``ph: X``) events of a trace file, each with float ``ts``/``end``."""
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)
    out = []
    for e in data["traceEvents"] if isinstance(data, dict) else data:
        if e.get("ph") == "X" and "ts" in e:
            e["ts"] = float(e["ts"])
            e["end"] = e["ts"] + float(e.get("dur", 0))
            out.append(e)
    return out


def _windows(evs: list[dict[str, Any]]) -> list[tuple[float, float]]:
    named = sorted(
        (e for e in evs if e.get("cat") in CPU_NAMED), key=lambda e: (e["ts"], -e["end"])
    )
    steps: list[tuple[float, float, str]] = []
    for e in named:
        if e["name"].startswith("ProfilerStep#"):
            if steps and e["ts"] < steps[-1][1] and e["name"] == steps[-1][2]:
                continue
            steps.append((e["ts"], e["end"], e["name"]))
    if steps:
        trace = [e["end"] for e in evs if e.get("cat") == "Trace"]
        act = [e for e in evs if e.get("cat") in ACTIVITY]
        limit = max(trace) if trace else max(e["end"] for e in act)
        return [(a, min(b, limit) if a < limit else b) for a, b, _ in steps]
    act = [e for e in evs if e.get("cat") in ACTIVITY]
    lo, hi = min(e["ts"] for e in act), max(e["end"] for e in act)
    ends = sorted(e["end"] for e in named if e["name"].startswith("Optimizer.step#"))
    if len(ends) >= 2:
        out, start = [], lo
        for end in ends:
            if end > start:
                out.append((start, end))
                start = end
        return out
    for phase in ("|measure|", "|warmup|"):
        marked = [e for e in named if e["name"].startswith("[param|") and phase in e["name"]]
        if marked:
            outer: list[dict[str, Any]] = []
            for e in marked:
                if outer and e["end"] <= outer[-1]["end"] and e["tid"] == outer[-1]["tid"]:
                    continue
                outer.append(e)
            return [(e["ts"], e["end"]) for e in outer]
    return [(lo, hi)]


def _step_at(windows: list[tuple[float, float]], t: float) -> int:
    k = bisect_right([a for a, _ in windows], t) - 1
    if k >= 0 and (t < windows[k][1] or t == windows[k][0] == windows[k][1]):
        return k
    return -1


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def _clip(intervals: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    return [(max(a, lo), min(b, hi)) for a, b in intervals if b > lo and a < hi]


def _primary(device: list[dict[str, Any]]) -> object:
    time: dict[object, float] = {}
    for e in device:
        time[e["pid"]] = time.get(e["pid"], 0.0) + e["end"] - e["ts"]
    return max(time, key=lambda d: time[d])


def _launched(path: Path) -> tuple[list[tuple[float, float]], list[list[dict[str, Any]]]]:
    """The step windows, and per step the device spans (primary device) it launched, each
    with ``launch_ts``: the start of its runtime call, when the trace has it."""
    evs = events(path)
    windows = _windows(evs)
    device = [e for e in evs if e.get("cat") in DEVICE]
    members: list[list[dict[str, Any]]] = [[] for _ in windows]
    if not device:
        return windows, members
    primary = _primary(device)
    launch = {}
    for e in evs:
        corr = e.get("args", {}).get("correlation")
        if e.get("cat") in RUNTIME and corr is not None:
            launch[corr] = e["ts"]
    by_ext = {}
    for e in evs:
        ext = e.get("args", {}).get("External id")
        if e.get("cat") in CPU_NAMED and ext is not None:
            by_ext[ext] = e["ts"]
    for e in device:
        if e["pid"] != primary:
            continue
        args = e.get("args", {})
        if args.get("correlation") in launch:
            e["launch_ts"] = launch[args["correlation"]]
            k = _step_at(windows, e["launch_ts"])
        elif args.get("External id") in by_ext:
            k = _step_at(windows, by_ext[args["External id"]])
        else:
            k = _step_at(windows, e["ts"])
        if k >= 0:
            members[k].append(e)
    return windows, members


def steps(path: Path) -> list[dict[str, Any]]:
    """Per step: ``kernel_us``, ``busy_us``, ``span_us`` and ``busy_share``, by launch, and
    ``launch_delays``: kernel start minus its runtime call's start, for each kernel it
    launched whose call the trace has."""
    windows, members = _launched(path)
    if not any(e.get("cat") in DEVICE for e in events(path)):
        return []
    out, previous = [], float("-inf")
    for (lo, hi), mine in zip(windows, members):
        start = max(lo, previous)
        end = max(hi, max((e["end"] for e in mine), default=hi), start)
        previous = end
        busy = _length(_union([(e["ts"], e["end"]) for e in mine]))
        span = end - start
        kernels = [e for e in mine if e.get("cat") in KERNEL]
        out.append(
            {
                "kernel_us": sum(e["end"] - e["ts"] for e in kernels),
                "busy_us": busy,
                "span_us": span,
                "busy_share": min(1.0, busy / span) if span > 0 else 0.0,
                "launch_delays": [e["ts"] - e["launch_ts"] for e in kernels if "launch_ts" in e],
            }
        )
    return out


def kernel_rows(path: Path) -> dict[str, tuple[list[float], int]]:
    """Kernel name → its summed duration in each step that launched it, and its calls over
    all steps (the top-kernels table's ``min``/``median``/``max`` and ``calls``)."""
    windows, members = _launched(path)
    rows: dict[str, tuple[list[float], int]] = {}
    for k, mine in enumerate(members):
        for e in mine:
            if e.get("cat") in KERNEL:
                row, calls = rows.get(e["name"], ([0.0] * len(windows), 0))
                row[k] += e["end"] - e["ts"]
                rows[e["name"]] = (row, calls + 1)
    return rows


def hidden_comm(path: Path) -> tuple[float, float] | None:
    """All steps' communication (µs) and the part of it hidden under compute kernels, per
    step window (the backends' CPU-side collective ranges when there are no communication
    kernels); None without communication."""
    evs = events(path)
    kernels = [e for e in evs if e.get("cat") in KERNEL]
    is_comm = [any(m in e["name"].lower() for m in COMM) for e in kernels]
    if any(is_comm):
        comm = _union([(e["ts"], e["end"]) for e, c in zip(kernels, is_comm) if c])
    else:
        cpu = [e for e in evs if e.get("cat") in CPU_NAMED and e["name"].startswith(BACKENDS)]
        comm = _union([(e["ts"], e["end"]) for e in cpu])
    if not comm:
        return None
    compute = _union([(e["ts"], e["end"]) for e, c in zip(kernels, is_comm) if not c])
    total = hidden = 0.0
    for lo, hi in _windows(evs):
        mine = _clip(comm, lo, hi)
        total += _length(mine)
        for a, b in mine:
            hidden += _length(_clip(compute, a, b))
    return total, hidden


def steps_wall(path: Path) -> float:
    """The step windows' summed length (µs)."""
    return sum(hi - lo for lo, hi in _windows(events(path)))
