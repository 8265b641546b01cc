"""Normalising while parsing (json's ``object_hook``) gives the same trace as normalising an
already parsed event list, and the hook's edge cases: metadata timestamps, entries of
``traceEvents`` that are not events, and ``args`` objects that look like nothing special."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis.load import load_trace_bytes
from torchscope.analysis.model import Trace
from torchscope.analysis.normalise import normalise

PARITY_TRACES = [
    "kineto_tiny_mlp_legacy_v100.json",
    "hta_triton_kernel_a100.json.gz",
    "param_dlrm_ddp_v100_rank0.json.gz",
    "hta_resnet_v100_ns_units.json.gz",
]


def _fields(trace: Trace) -> dict[str, Any]:
    return {k: v for k, v in vars(trace).items() if k != "meta"}


@pytest.mark.parametrize("name", PARITY_TRACES)
def test_hook_and_list_paths_agree(shared_traces: Path, name: str) -> None:
    data = (shared_traces / name).read_bytes()
    hooked = load_trace_bytes(name, data)
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    events = doc.pop("traceEvents")
    listed = normalise(name, doc, events)
    assert _fields(hooked) == _fields(listed)
    assert hooked.meta.keys() == listed.meta.keys()
    assert hooked.kernels or hooked.ops  # not trivially equal


def _encode(events: list[Any]) -> bytes:
    return json.dumps({"traceEvents": events}).encode()


def test_origin_is_the_first_complete_event_not_a_metadata_timestamp() -> None:
    # Absolute epoch µs as floats resolve only 0.25 µs: subtracting the first X event's ts
    # keeps a 1.2 µs kernel 1.2 µs. A metadata event with ts 0 must not become the origin.
    t0 = 1_695_835_542_514_261.3
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "x"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": t0, "dur": 5},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": t0 + 2,
            "dur": 1.2,
            "args": {"device": 0, "stream": 7, "correlation": 3},
        },
    ]
    trace = load_trace_bytes("t.json", _encode(events))
    (kernel,) = trace.kernels
    assert kernel.end - kernel.start == pytest.approx(1.2, abs=1e-9)
    assert trace.ops[0].start == 0
    assert kernel.correlation == 3


def test_entries_that_are_not_events_are_counted_as_skipped() -> None:
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 4}
    events: list[Any] = [op, 7, "text", {"no": "phase"}, {**op, "ts": "late"}, [1, 2]]
    hooked = load_trace_bytes("t.json", _encode(events))
    listed = normalise("t.json", {}, json.loads(_encode(events))["traceEvents"])
    assert hooked.skipped_events == listed.skipped_events == 5
    assert [s.name for s in hooked.ops] == ["aten::mm"]


def test_args_objects_pass_through_unchanged() -> None:
    args = {"Input Dims": [[2, 3]], "nested": {"deep": {"x": 1}}, "External id": 4}
    op = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::mm",
        "pid": 1,
        "tid": 1,
        "ts": 10,
        "dur": 4,
        "args": args,
    }
    doc = {"traceEvents": [op], "deviceProperties": [{"id": 0, "name": "GPU", "major": 8}]}
    trace = load_trace_bytes("t.json", json.dumps(doc).encode())
    assert trace.ops[0].args == args
    assert trace.meta["deviceProperties"] == doc["deviceProperties"]
