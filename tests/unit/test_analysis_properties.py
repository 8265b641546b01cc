"""Property tests: damaged real traces either analyse or raise TraceError, nothing else.

Random truncations (of the JSON text and of the gzip stream) and random deletions or
corruptions of fields in real traces are fed through the whole pipeline (read,
nest, link, segment, metrics, verdict, rules, render, to_dict).
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchscope.analysis import TraceError
from torchscope.analysis.engine import analyze
from torchscope.ingest import load_trace
from torchscope.protocol import to_builtins
from torchscope.report import render_report

SMALL = [
    "hta_cuda_event_sync_a100.json.gz",
    "hta_triton_kernel_a100.json.gz",
    "hta_cuda_event_sync_multi_stream_a100.json.gz",
    "kineto_tiny_mlp_legacy_v100.json",
    "param_dlrm_ddp_v100_rank0.json.gz",
]

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)


@pytest.fixture(scope="module")
def documents(shared_traces: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for name in SMALL:
        data = (shared_traces / name).read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        out[name] = json.loads(data)
    return out


def survive(name: str, data: bytes) -> None:
    """The contract: a Report that renders and serialises, or a TraceError naming the file."""
    try:
        report = analyze(load_trace(data, name=name))
    except TraceError as exc:
        assert name in str(exc)
        return
    render_report(report)
    json.dumps(to_builtins(report), allow_nan=False)
    assert not [n for n in report.notes if n.startswith("rule ")], report.notes


@SETTINGS
@given(which=st.sampled_from(SMALL), cut=st.floats(0.0, 1.0))
def test_truncated_json(documents: dict[str, dict[str, Any]], which: str, cut: float) -> None:
    text = json.dumps(documents[which]).encode()
    data = text[: min(len(text) - 1, int(len(text) * cut))]
    with pytest.raises(TraceError):
        load_trace(data, name=which)


@SETTINGS
@given(which=st.sampled_from(SMALL), cut=st.floats(0.0, 0.999))
def test_truncated_gzip(documents: dict[str, dict[str, Any]], which: str, cut: float) -> None:
    packed = gzip.compress(json.dumps(documents[which]).encode())
    data = packed[: int(len(packed) * cut)]
    with pytest.raises(TraceError) as info:
        load_trace(data, name=which)
    assert which in str(info.value)


FIELDS = ["ph", "cat", "name", "ts", "dur", "pid", "tid", "args"]
ARG_FIELDS = [
    "correlation",
    "External id",
    "external id",
    "device",
    "stream",
    "bytes",
    "Input type",
    "Input Dims",
    "Call stack",
]
BAD_VALUES: list[Any] = [
    None,
    "",
    "x",
    -1,
    0,
    1e300,
    -1e300,
    [],
    {},
    [1, 2],
    {"a": 1},
    True,
    "stream x",
    "12",
]


@SETTINGS
@given(
    which=st.sampled_from(SMALL),
    edits=st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.sampled_from(FIELDS + [f"args.{a}" for a in ARG_FIELDS]),
            st.one_of(st.just("delete"), st.sampled_from(BAD_VALUES)),
        ),
        min_size=1,
        max_size=40,
    ),
)
def test_deleted_and_corrupted_fields(
    documents: dict[str, dict[str, Any]], which: str, edits: list[tuple[int, str, Any]]
) -> None:
    doc = copy.deepcopy(documents[which])
    events = doc["traceEvents"]
    for index, field, value in edits:
        ev = events[index % len(events)]
        target = ev
        if field.startswith("args."):
            target = ev.get("args")
            if not isinstance(target, dict):
                continue
            field = field[5:]
        if value == "delete":
            target.pop(field, None)
        else:
            target[field] = value
    survive(which, json.dumps(doc).encode())


@SETTINGS
@given(
    which=st.sampled_from(SMALL),
    key=st.sampled_from(
        [
            "traceEvents",
            "deviceProperties",
            "computeProperties",
            "displayTimeUnit",
            "baseTimeNanoseconds",
        ]
    ),
    value=st.one_of(st.just("delete"), st.sampled_from(BAD_VALUES)),
    keep=st.floats(0.0, 1.0),
)
def test_top_level_damage_and_dropped_events(
    documents: dict[str, dict[str, Any]], which: str, key: str, value: Any, keep: float
) -> None:
    doc = copy.deepcopy(documents[which])
    doc["traceEvents"] = doc["traceEvents"][: int(len(doc["traceEvents"]) * keep)]
    if value == "delete":
        doc.pop(key, None)
    else:
        doc[key] = value
    survive(which, json.dumps(doc).encode())
