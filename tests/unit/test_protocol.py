"""Framing and messages between the daemon and the worker."""

import struct

import msgpack
import pytest

from torchscope.protocol import (
    MAX_FRAME_BYTES,
    FrameDecoder,
    Hello,
    JobError,
    ProfileRequest,
    ProfileResult,
    ProtocolError,
    decode,
    encode,
)


def _request(job_id: int = 1) -> ProfileRequest:
    return ProfileRequest(
        job_id, "/w/model.py", "Model.forward", "Model().forward(x)", "/t/x.json.gz"
    )


def test_round_trip_keeps_every_field() -> None:
    messages = [
        _request(),
        Hello(1, "3.11.7", "/usr/bin/python3", "2.13.0", False, [], 42),
        ProfileResult(3, "/t.json.gz", 2500.0, [2.7, 2.8], 1.1, "cpu", "x86", 5, 9, "2.13.0"),
        JobError(4, "call-raised", "boom", 12, "Traceback ..."),
    ]
    for message in messages:
        frame = encode(message)
        assert decode(frame[4:]) == message


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
