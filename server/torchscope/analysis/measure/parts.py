"""The parts of a :class:`~..results.Report` that the measure stage fills: per line
(``LineStats``, with its ops, kernels, copies and memory), per callee (``CalleeStats``) and the
memory summary. Types only, importing nothing of the analysis: ``results.py`` holds them and
``lines.py``, ``callees.py`` and ``memory.py`` make them, with no import circle between the
result types and the stages (type-only imports included)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...protocol import json_as


@dataclass
class LineOp:
    name: str
    calls: float
    self_cpu_us: float
    shapes: str = ""
    gflops: float | None = None
    gbps: float | None = None
    efficiency: float | None = None


@dataclass
class LineKernel:
    name: str
    calls: float
    device_us: float


@dataclass
class LineCopy:
    kind: str
    calls: float
    bytes: float
    device_us: float


@dataclass
class LineStats:
    """One source line, per call of the function."""

    line: int
    share: float
    cpu_us: float
    device_us: float
    hits: float
    """How often the line ran per call (a loop body: once per iteration)."""
    cpu_us_min: float
    cpu_us_median: float
    cpu_us_max: float
    profiled_cpu_us: float = 0.0
    """The line's median CPU time as profiled (profiler overhead included); ``cpu_us`` is its
    share of the unprofiled time per call when that was measured."""
    syncs: float = 0.0
    sync_us: float = 0.0
    ops: list[LineOp] = field(default_factory=list)
    kernels: list[LineKernel] = field(default_factory=list)
    copies: list[LineCopy] = field(default_factory=list)
    memory: LineMemory | None = field(default=None, metadata=json_as(omit_none=True))
    """Bytes the line allocated per device (only with the memory pass; see ``memory``)."""
    compiled: CompiledOnLine | None = field(
        default=None, metadata=json_as(omit_none=True, flatten=True)
    )
    """In a compile comparison, the line's compiled time and the lines fused with it (its
    ``compiled_us`` and ``fused_with`` in the eager side's JSON ``lines``)."""


@dataclass(frozen=True)
class CompiledOnLine:
    compiled_us: float | None
    """None where the compiled side has no per-line times (no provenance, no kernel here)."""
    fused_with: list[int] = field(default_factory=list)


@dataclass
class CalleeStats:
    """One workspace function called by the profiled one, per call of the profiled function."""

    file: str
    """As the frame names it: relative to the ``sys.path`` entry it was imported from."""
    line: int
    """The callee's ``def`` line."""
    name: str
    calls: float
    cpu_us: float
    share: float
    """Of the profiled function: measured like its lines (see ``callee_stats``)."""


@dataclass(frozen=True)
class DeviceMemory:
    """One line's memory on one device, per call."""

    alloc_bytes: float
    allocs: float
    alive_bytes: float
    """Allocated by the line and still alive after the call (its locals and result freed)."""
    retained_bytes: float = 0.0
    """Allocated by the line and never freed in the trace (per call)."""
    leaks_every_call: bool = False
    """True when the line retained bytes in every profiled call (at least two)."""


@dataclass(frozen=True)
class Allocation:
    """One of a line's largest allocations (per call: ``count`` blocks of ``bytes``)."""

    bytes: int
    count: float
    device: str
    op: str
    shapes: str


@dataclass(frozen=True)
class LineMemory:
    """Per-device memory of one source line (JSON: ``lines[].memory``)."""

    device: dict[str, DeviceMemory]
    largest: list[Allocation] = field(default_factory=list)


@dataclass(frozen=True)
class DevicePeak:
    """Peak above the memory held before the call, on one device (median over calls)."""

    peak_bytes: float
    peak_line: int | None


@dataclass(frozen=True)
class MemorySummary:
    """The top-level ``memory`` object of a profile: peak (needs the memory pass) and page
    faults (measured by every profile's timing pass)."""

    peak_bytes: float | None
    peak_line: int | None
    page_faults_per_call: float | None
    page_fault_us: float | None
    """Microseconds the page faults cost per call (faults × calibrated cost of one), summed
    over the threads that took them."""
    page_fault_share: float | None
    """``page_fault_us`` over the median time per call, at most 1: the faults of several
    threads overlap in time, so their summed cost can exceed the call's wall time."""
    fault_cost_us: float | None = None
    """The calibrated cost of one minor fault on the profiling machine."""
    peak_device: str | None = None
    peaks: dict[str, DevicePeak] = field(default_factory=dict)
    cuda: dict[str, Any] = field(default_factory=dict)
    """The CUDA allocator's own numbers (``max_allocated_bytes``, ``snapshot_peak_bytes``,
    ``free_bytes_at_start``, ``snapshot_path``) when the memory pass ran on CUDA."""
