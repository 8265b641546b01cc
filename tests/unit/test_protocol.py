"""Framing and messages between the daemon and the worker."""

import math
import struct
from dataclasses import dataclass, field
from typing import Any, Optional

import msgpack
import pytest

from torchscope.protocol import (
    MAX_FRAME_BYTES,
    Capture,
    CompareResult,
    DiffResult,
    FrameDecoder,
    GraphBreakSite,
    Hello,
    Inputs,
    JobError,
    JobOptions,
    KernelSource,
    Machine,
    Measurements,
    Peaks,
    ProfileRequest,
    ProfileResult,
    ProtocolError,
    RunRequest,
    RunResult,
    RunTarget,
    TargetReport,
    decode,
    encode,
    from_builtins,
    json_as,
    to_builtins,
)


def _request(job_id: int = 1) -> ProfileRequest:
    return ProfileRequest(
        job_id, "/w/model.py", "Model.forward", "Model().forward(x)", "/t/x.json.gz"
    )


def test_round_trip_keeps_every_field() -> None:
    messages = [
        _request(),
        Hello(1, "3.11.7", "/usr/bin/python3", "2.13.0", False, [], 42),
        _result(3),
        JobError(4, "call-raised", "boom", 12, "Traceback ..."),
    ]
    for message in messages:
        frame = encode(message)
        assert decode(frame[4:]) == message


def _result(job_id: int, path: str = "/t.json.gz") -> ProfileResult:
    measured = Measurements(
        2500.0,
        [2.7, 2.8],
        1.1,
        "cpu",
        "x86",
        calls=40,
        peaks=Peaks({"float32": 812.5}, 9.5),
        line_us={12: [1.0, 1.5]},
        machine=Machine(0.4, 0.8, 0.0, 2),
        cuda_memory={"snapshot_path": "/t.pickle", "max_allocated_bytes": 4096},
    )
    inputs = Inputs("capture", "/c.pt", "2026-12-05T08:00:00", batch=0)
    return ProfileResult(job_id, path, measured, 5, 9, "2.13.0", inputs=inputs)


def test_nested_results_travel_typed() -> None:
    """The two-sided replies carry whole ``ProfileResult``s, and a run its targets' reports:
    one codec, no field copied by hand (the worker's ``line_us`` keys stay ints)."""
    kernel = KernelSource("k1", "cpp_fused_relu_0", [4, 5], ["relu"])
    messages = [
        CompareResult(5, _result(5), _result(5, "/c.json.gz"), kernel_sources=[kernel],
                      graph_break_sites=[GraphBreakSite("/w/m.py", 7, "print")]),
        DiffResult(6, _result(6), _result(6, "/b.json.gz"), outputs={"same": True}),
        RunRequest(7, "/w/m.py", "f", None, "/t.json.gz", JobOptions(steps=3),
                   targets=[RunTarget("/w/m.py", "f", "/t.json.gz")]),
        RunResult(7, "finished", 0, targets=[TargetReport(
            "/w/m.py", "f", 3, [("/w/main.py", 10, 3)], True, 9.0, [1.0], profile=_result(7),
            error=JobError(7, "internal", "x"), capture=Capture("/c.pt", True, 10))]),
    ]  # fmt: skip
    for message in messages:
        assert decode(encode(message)[4:]) == message
    back = decode(encode(messages[0])[4:])
    assert isinstance(back, CompareResult) and back.eager.measured.line_us == {12: [1.0, 1.5]}


def test_a_mistyped_field_is_a_protocol_error_naming_it() -> None:
    body = msgpack.packb({"type": "result", "job_id": 1, "trace_path": "/t", "steps": 1,
                          "measured": {"cold_us": "fast", "call_us": [], "dispatch_floor_us": 1}})  # fmt: skip
    with pytest.raises(ProtocolError, match=r"ProfileResult\.measured\.cold_us should be a number"):
        decode(body)
    with pytest.raises(ProtocolError, match="missing"):
        decode(msgpack.packb({"type": "result", "job_id": 1}))


@dataclass
class _Shown:
    n: int = field(metadata=json_as(name="N"))
    ratio: float = 0.0
    note: Optional[str] = field(default=None, metadata=json_as(omit_none=True))
    hidden: str = field(default="", metadata=json_as(skip=True))
    inner: Optional[Inputs] = field(default=None, metadata=json_as(flatten=True))
    pair: tuple[int, int] = (1, 2)
    shown: Any = field(default=None, metadata=json_as(view=lambda v: {"as": str(v)}))


def test_to_builtins_writes_what_json_as_says() -> None:
    data = to_builtins(_Shown(3, math.nan, None, "x", Inputs("run"), shown=4))
    assert data == {"N": 3, "ratio": None, "source": "run", "path": None, "captured_at": None,
                    "pair": [1, 2], "shown": {"as": "4"}}  # fmt: skip
    assert to_builtins(_Shown(3, math.inf), finite=False)["ratio"] == math.inf
    assert to_builtins(_Shown(3, note="n"))["note"] == "n"
    back = from_builtins(_Shown, {"N": 3, "ratio": None, "pair": [4, 5], "note": "n"})
    assert back == _Shown(3, math.nan, "n", pair=(4, 5)) or math.isnan(back.ratio)
    assert back.pair == (4, 5) and back.n == 3


def test_partial_reads_are_reassembled() -> None:
    frame = encode(_request())
    decoder = FrameDecoder()
    received = []
    for i in range(len(frame)):
        received += decoder.feed(frame[i : i + 1])
        if i < len(frame) - 1:
            assert received == []
    assert received == [_request()]
    assert decoder.pending == 0


def test_two_frames_in_one_chunk() -> None:
    decoder = FrameDecoder()
    chunk = encode(_request(1)) + encode(_request(2)) + encode(_request(3))[:5]
    assert [m.job_id for m in decoder.feed(chunk)] == [1, 2]  # type: ignore[attr-defined]
    assert decoder.pending == 5


def test_oversized_frame_is_rejected_before_reading_it() -> None:
    decoder = FrameDecoder(max_frame_bytes=1024)
    with pytest.raises(ProtocolError, match="exceeds"):
        decoder.feed(struct.pack(">I", 1025) + b"x")


def test_default_limit_rejects_a_print_in_the_pipe() -> None:
    # "hell" read as a big-endian length is ~1.7 GB: the decoder must refuse, not wait for it.
    with pytest.raises(ProtocolError, match="exceeds"):
        FrameDecoder().feed(b"hello from a stray print\n")
    assert int.from_bytes(b"hell", "big") > MAX_FRAME_BYTES


def test_garbage_and_unknown_types_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        decode(b"\xc1")
    with pytest.raises(ProtocolError, match="unknown"):
        decode(msgpack.packb({"type": "nope"}))
    with pytest.raises(ProtocolError, match="missing"):
        decode(msgpack.packb({"type": "profile", "job_id": 1}))
