"""The memory pass on a GPU: per-line CUDA bytes, the peak from ``[memory]`` events and from
the allocator's own history (``_record_memory_history`` + ``_snapshot``), all checked against
``torch.cuda.max_memory_allocated``."""

from __future__ import annotations

import asyncio
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from torchscope.host.profile_run import PROFILE, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.source.targets import function_named, read_source

pytestmark = pytest.mark.cuda

SAMPLES = FIXTURES / "memory_samples.py"
CALL = 'two_temporaries(torch.randn(2048, 1024, device="cuda"))'


def profile_memory(trace_dir: Path) -> dict[str, Any]:
    target = function_named(read_source(SAMPLES), str(SAMPLES), "two_temporaries")

    async def go() -> dict[str, Any]:
        profiler = Profiler(sys.executable, TraceStore(trace_dir))
        try:
            outcome = await profiler.run_job(
                PROFILE, target, CALL, JobOptions(steps=3, memory=True)
            )
            return to_builtins(outcome)
        finally:
            await profiler.close()

    return asyncio.run(go())


def test_snapshot_and_events_agree_with_max_memory_allocated(trace_dir: Path) -> None:
    report = profile_memory(trace_dir)
    memory = report["memory"]
    cuda = memory["cuda"]
    expected = 2048 * 1024 * 4
    # The allocator's history and its own high-water mark see the same blocks.
    assert cuda["snapshot_peak_bytes"] == pytest.approx(cuda["max_allocated_bytes"], rel=0.05)
    assert cuda["max_allocated_bytes"] >= 2 * expected
    with open(cuda["snapshot_path"], "rb") as f:
        snapshot = pickle.load(f)
    assert any(e.get("action") == "alloc" for e in snapshot["device_traces"][0])
    # The profiler's events, per call, against the same ground truth.
    assert memory["peak_device"] == "cuda"
    assert memory["peak_bytes"] == pytest.approx(2 * expected, rel=0.05)
    assert memory["peak_bytes"] <= cuda["max_allocated_bytes"] * 1.05
    lines = SAMPLES.read_text().splitlines()
    by_line = {entry["line"]: entry for entry in report["lines"]}
    for text in ("    a = x * 2.0", "    b = x.exp()"):
        numbers = by_line[lines.index(text) + 1]["memory"]["device"]["cuda"]
        assert numbers["alloc_bytes"] == pytest.approx(expected, rel=0.05)
    assert memory["peak_line"] == lines.index("    b = x.exp()") + 1
    leaks = [f for f in report["findings"] if f["rule"] == "leak"]
    assert [f["line"] for f in leaks] == [lines.index("    LEAKED.append(x[:1].clone())") + 1]
