"""Fuzz tests (hypothesis) for the two parsers that read untrusted bytes: the worker protocol's
framing, and the trace parser (through its public ``load_trace``/``analyze_trace`` only)."""

from __future__ import annotations

import contextlib
import gzip
import json
import struct
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.hostile import fuzz_strategy, write_fuzzed
from torchscope.analysis import TraceError, analyze_trace, load_trace
from torchscope.protocol import (
    FrameDecoder,
    JobError,
    Message,
    Output,
    Progress,
    ProtocolError,
    encode,
    to_builtins,
)

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)

text = st.text(max_size=200)
messages = st.one_of(
    st.builds(
        Output,
        job_id=st.integers(0, 2**31),
        stream=st.sampled_from(["stdout", "stderr"]),
        text=text,
    ),
    st.builds(
        Progress,
        job_id=st.integers(0, 2**31),
        stage=text,
        message=text,
        fraction=st.floats(0, 1),
    ),
    st.builds(
        JobError,
        job_id=st.integers(0, 2**31),
        kind=text,
        message=text,
        line=st.none() | st.integers(0, 10**6),
        traceback=text,
    ),
)


@FUZZ
@given(st.lists(messages, max_size=8), st.lists(st.integers(1, 64), max_size=40))
def test_frames_survive_any_split(sent: list[Message], cuts: list[int]) -> None:
    stream = b"".join(encode(m) for m in sent)
    decoder = FrameDecoder()
    received: list[Message] = []
    position = 0
    for size in [*cuts, len(stream)]:
        received.extend(decoder.feed(stream[position : position + size]))
        position += size
    assert received == sent
    assert decoder.pending == 0


@FUZZ
@given(st.binary(max_size=2048))
def test_garbage_is_a_protocol_error_or_nothing(data: bytes) -> None:
    decoder = FrameDecoder(max_frame_bytes=1 << 20)
    with contextlib.suppress(ProtocolError):
        decoder.feed(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=5) | json_values)
def test_framed_msgpack_of_any_shape_is_a_protocol_error_or_a_message(payload: Any) -> None:
    body = msgpack.packb(payload, use_bin_type=True)
    with contextlib.suppress(ProtocolError):
        FrameDecoder().feed(struct.pack(">I", len(body)) + body)


# --- the trace parser ------------------------------------------------------------------

numbers = st.one_of(
    st.integers(-(10**12), 10**15),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
)
events = st.fixed_dictionaries(
    {},
    optional={
        "ph": st.sampled_from(["X", "B", "E", "i", "f", "s", "M", "C", "Z", 1]),
        "name": st.sampled_from(
            ["aten::mm", "ProfilerStep#1", "cudaLaunchKernel", "", "torchscope:L3"]
        )
        | st.integers(),
        "cat": st.sampled_from(
            ["cpu_op", "kernel", "cuda_runtime", "user_annotation", "gpu_memcpy", "ac2g"]
        )
        | st.none(),
        "ts": numbers,
        "dur": numbers,
        "pid": numbers,
        "tid": numbers,
        "id": numbers,
        "args": st.dictionaries(
            st.sampled_from(
                ["correlation", "External id", "stream", "device", "Input Dims", "Sequence number"]
            ),
            json_values,
            max_size=4,
        )
        | json_values,
    },
)
documents = st.fixed_dictionaries(
    {"traceEvents": st.lists(events, max_size=30) | json_values},
    optional={
        "deviceProperties": json_values,
        "displayTimeUnit": st.sampled_from(["ms", "ns"]) | json_values,
        "baseTimeNanoseconds": numbers,
        "traceName": json_values,
    },
)


def _check(path: Path) -> None:
    try:
        load_trace(path)
        to_builtins(analyze_trace(path))
    except TraceError as exc:
        assert str(exc)  # every refusal says something


@settings(FUZZ, max_examples=200)
@given(documents, st.booleans())
def test_any_trace_document_analyses_or_is_a_trace_error(doc: dict[str, Any], zipped: bool) -> None:
    data = json.dumps(doc).encode()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("t.json.gz" if zipped else "t.json")
        path.write_bytes(gzip.compress(data) if zipped else data)
        _check(path)


@FUZZ
@given(st.binary(max_size=512), st.sampled_from(["t.json", "t.json.gz"]))
def test_any_bytes_are_a_trace_error(data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        with pytest.raises(TraceError):
            load_trace(path)


# --- the reader through the CLI: any spliced trace is a report or one message ---------------

FACES = settings(FUZZ, max_examples=15)  # a subprocess each: 0.4-1.5 s


@FACES
@given(fuzz_strategy(), st.booleans())
def test_cli_on_any_spliced_trace_is_a_report_or_one_message(
    case: tuple[bytes, bool], as_json: bool
) -> None:
    import subprocess

    from tests.conftest import REPO
    from tests.reliability.conftest import ENV, TORCHSCOPE

    data, zipped = case
    with tempfile.TemporaryDirectory() as folder:
        path = write_fuzzed(Path(folder), data, zipped)
        command = [*TORCHSCOPE, "analyze", str(path), *(["--json"] if as_json else [])]
        run = subprocess.run(
            command, env=ENV, cwd=REPO, capture_output=True, timeout=60, stdin=subprocess.DEVNULL
        )
    stderr = run.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in run.stderr, (data, stderr)
    if run.returncode == 0:
        out = run.stdout.decode("utf-8")  # strict: valid UTF-8
        if as_json:
            json.loads(out)
        return
    assert run.returncode == 1, (data, run.returncode, stderr)
    [line] = stderr.strip().splitlines()
    assert line.startswith(f"torchscope: {path}: "), line
