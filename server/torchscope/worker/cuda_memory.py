"""The CUDA side of the memory pass: the caching allocator's own history, as a cross-check.

``torch.profiler``'s ``[memory]`` events give per-line bytes on every device; on CUDA the
allocator can also record every block with its stack (``_record_memory_history``) and dump it
(``_snapshot``). This module replays that history to the peak of allocated bytes and reads
``max_memory_allocated`` over the same window; both are reported so the user (and the CUDA
tests) can check the per-line numbers against the allocator's own count.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Iterator
from typing import Any

from torchscope.protocol import JobRequest

#: History entries the allocator keeps (a ring buffer): enough for K calls of a busy function.
MAX_ENTRIES = 100_000


def snapshot_peak_bytes(snapshot: dict[str, Any], device: int = 0) -> int:
    """Peak of live bytes above the start of the recorded history, replaying its
    ``alloc``/``free_completed`` actions in order (``segment_*`` actions are reservations)."""
    traces = snapshot.get("device_traces") or []
    if device >= len(traces):
        return 0
    live = peak = 0
    for entry in traces[device]:
        action = entry.get("action")
        if action == "alloc":
            live += int(entry.get("size", 0))
            peak = max(peak, live)
        elif action == "free_completed":
            live -= int(entry.get("size", 0))
    return peak


@contextlib.contextmanager
def record_cuda_memory(result: dict[str, Any], snapshot_path: str) -> Iterator[None]:
    """Record the allocator's history for the body; fill ``result`` with the snapshot's peak,
    ``max_memory_allocated`` above the start (both bytes) and where the snapshot was saved."""
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    result["free_bytes_at_start"] = int(torch.cuda.mem_get_info()[0])
    torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES)
    try:
        yield
        torch.cuda.synchronize()
        snapshot = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    result["max_allocated_bytes"] = int(torch.cuda.max_memory_allocated() - base)
    result["snapshot_peak_bytes"] = snapshot_peak_bytes(snapshot, torch.cuda.current_device())
    os.makedirs(os.path.dirname(os.path.abspath(snapshot_path)), exist_ok=True)
    with open(snapshot_path, "wb") as out:
        pickle.dump(snapshot, out)
    result["snapshot_path"] = snapshot_path


def memory_recording(
    request: JobRequest, use_cuda: bool, result: dict[str, Any]
) -> contextlib.AbstractContextManager[None]:
    """What the profiled pass runs under: the allocator history when the ``memory`` option
    is on and the job runs on CUDA (saved as ``<trace>.memory.pickle``), else nothing."""
    if not (request.options.memory and use_cuda):
        return contextlib.nullcontext()
    snapshot = request.trace_path.rsplit(".json", 1)[0] + ".memory.pickle"
    return record_cuda_memory(result, snapshot)
