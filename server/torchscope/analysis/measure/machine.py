"""This machine, for a trace recorded on it: its CPU's name and its calibrated peaks.

``torch.profiler`` writes the host's network name into a trace (``host_name``) but not its CPU.
A CPU trace whose host is this machine ran on this machine's CPU, so ``analyze`` names that CPU
the way ``profile`` and ``calibrate`` do (``protocol.cpu_name``) and sets the trace's GEMMs and
copies against the peaks ``torchscope calibrate`` (or any profile) measured here. A trace from
another host keeps the name ``CPU (host)`` and has no peak: its efficiency is unknown.

The faces read the machine (:meth:`LocalMachine.read`) and hand it to ``analyze_trace``; the
analysis itself never looks at the machine it runs on, so a test passes the machine it means.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchscope.protocol import CALIBRATION_FILE, cache_dir, cpu_name, host_name, machine_id

from ..results import Peaks


@dataclass(frozen=True)
class LocalMachine:
    """This machine: its host name (as traces record it), its CPU and its calibrated CPU
    peaks (None: ``torchscope calibrate`` has not run here)."""

    host: str
    cpu: str
    peaks: Peaks | None

    @classmethod
    def read(cls, folder: Path | None = None) -> LocalMachine:
        """This machine, with the best CPU peaks of its calibration store."""
        path = (folder or cache_dir()) / CALIBRATION_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        entries = data if isinstance(data, dict) else {}
        return cls(host_name(), cpu_name(), cpu_peaks(entries, machine_id(), cpu_name()))


def _value(entry: Any) -> float | None:
    if isinstance(entry, dict) and isinstance(entry.get("value"), (int, float)):
        return float(entry["value"])
    return None


def cpu_peaks(entries: dict[str, Any], machine: str, name: str) -> Peaks | None:
    """The highest calibrated CPU peak per dtype of ``machine`` (keys
    ``machine|torch …|cpu:Nt|dtype``, any torch and thread count: a peak is the best the CPU
    did), or None when none was measured."""
    gflops: dict[str, float] = {}
    copy: float | None = None
    for key, entry in entries.items():
        parts = key.split("|")
        value = _value(entry)
        if len(parts) != 4 or parts[0] != machine or not parts[2].startswith("cpu:"):
            continue
        if value is None:
            continue
        if parts[3] == "copy":
            copy = max(copy or 0.0, value)
        else:
            gflops[parts[3]] = max(gflops.get(parts[3], 0.0), value)
    if not gflops and copy is None:
        return None
    return Peaks(gflops, copy, "measured", name)


def recorded_here(trace_host: object, local: LocalMachine | None) -> bool:
    """The trace's ``host_name`` is this machine's."""
    return local is not None and isinstance(trace_host, str) and trace_host == local.host
