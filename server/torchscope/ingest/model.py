"""The normalised trace every stage after parsing reads.

Events stay as small tuples in one list per kind (not one object per event with methods):
a 54 MB trace has 216k events and the whole analysis must cost about as much as parsing it.
All times are microseconds as floats, on the trace's own clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

Args = Mapping[str, Any]
"""An event's raw ``args`` object, kept by reference (never copied)."""


class Span(NamedTuple):
    """One complete ('X') event.

    The reference reader makes these; the C scanner makes ``_native.Span`` objects
    (``_native_span.c``) with the same fields, read the same ways (attributes, indices,
    unpacking, ``==``) in 64 bytes instead of about 200: the times as doubles, the args as an
    offset into a temporary file they are set aside in, made into an ``Args`` when read."""

    start: float
    end: float
    name: str
    track: int
    """Index into :attr:`Trace.tracks` (a CPU thread or a device stream)."""
    args: Args
    correlation: object = None
    """``args["correlation"]``, read while normalising (when the event was just parsed and
    still in cache): linking 60k launches to their kernels reads it once per span."""


class Track(NamedTuple):
    """A thread (CPU side) or a stream (device side) as the trace names it."""

    pid: object
    tid: object
    device: int
    """Device index for device tracks, -1 for CPU threads."""
    stream: int
    """Stream id for device tracks, -1 for CPU threads."""


class MemoryEvent(NamedTuple):
    """One ``[memory]`` instant event (``profile_memory=True``): an allocation (``bytes`` > 0)
    or a free (< 0) of the block at ``addr`` on a device (c10 ``DeviceType``: 0 CPU, 1 CUDA).

    The C scanner makes ``_native.MemoryEvent`` objects instead: the same fields, read the
    same ways, in 64 bytes."""

    ts: float
    track: int
    """The CPU thread that allocated or freed, as an index into :attr:`Trace.tracks`
    (-1: a thread with no other event)."""
    bytes: int
    addr: int
    device_type: int
    device_id: int


@dataclass(frozen=True)
class DeviceProps:
    """One entry of ``deviceProperties`` (or the older ``computeProperties``)."""

    index: int
    name: str
    sm_count: int | None = None
    compute_capability: str | None = None
    memory_bytes: int | None = None


@dataclass
class Trace:
    """Everything the analysis needs from one trace file, split by event kind, each list
    sorted by start time.

    Legacy 2021 categories are already mapped to today's (``Operator`` → ops or annotations,
    ``Runtime`` → runtime, ``Kernel``/``Memcpy``/``Memset`` → device lists).
    """

    path: str
    meta: dict[str, Any]
    ops: list[Span] = field(default_factory=list)
    annotations: list[Span] = field(default_factory=list)
    python: list[Span] = field(default_factory=list)
    runtime: list[Span] = field(default_factory=list)
    kernels: list[Span] = field(default_factory=list)
    memcpys: list[Span] = field(default_factory=list)
    memsets: list[Span] = field(default_factory=list)
    gpu_annotations: list[Span] = field(default_factory=list)
    gpu_syncs: list[Span] = field(default_factory=list)
    profiler_ranges: list[Span] = field(default_factory=list)
    overhead: list[Span] = field(default_factory=list)
    """Profiler's own activity (``Activity Buffer Request``, CUPTI overhead)."""
    trace_spans: list[Span] = field(default_factory=list)
    """The ``Trace`` category span(s) covering the whole recording window."""
    tracks: list[Track] = field(default_factory=list)
    devices: list[DeviceProps] = field(default_factory=list)
    thread_names: dict[int, str] = field(default_factory=dict)
    legacy: bool = False
    """True for the 2021 format (``Operator``/``Runtime``/``Kernel`` categories)."""
    skipped_events: int = 0
    """Events dropped because a field was missing or of the wrong type."""
    memory: list[MemoryEvent] = field(default_factory=list)
    """``[memory]`` events in time order (empty unless the profile recorded memory)."""

    @property
    def device_spans(self) -> int:
        """How many kernel, memcpy and memset events the trace holds."""
        return len(self.kernels) + len(self.memcpys) + len(self.memsets)

    @property
    def has_device_activity(self) -> bool:
        """True when any device-side work was recorded."""
        return self.device_spans > 0
