"""Reading a gzipped trace as it inflates (``analysis/stream.py``, ``_native_stream.c``) gives
the trace of reading it whole, wherever the pieces and the scanner's window cut the events;
every document it does not take goes back to the whole read, errors and all."""

from __future__ import annotations

import gzip
import json
import shutil
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_analysis_native import _OP, TRACES, _doc, _events, _raw, _typed
from torchscope.analysis import accel, fastload, parse, stream
from torchscope.analysis.errors import TraceError
from torchscope.analysis.load import load_trace, load_trace_bytes
from torchscope.analysis.parse import decompress

pytestmark = pytest.mark.skipif(
    accel.native is None and shutil.which("cc") is None, reason="no C compiler: not built"
)


def _whole(name: str, text: bytes) -> Any:
    return fastload.load_fast(name, bytearray(text))


def _streamed(text: bytes, low: int = stream.LOW, feed: int = parse.FEED) -> Any:
    return stream.read_stream("t.json.gz", parse.Inflater(gzip.compress(text), feed), low)


@pytest.mark.parametrize("name", TRACES)
def test_every_shared_trace_streams_to_the_trace_of_the_whole_read(
    shared_traces: Path, name: str
) -> None:
    data = (shared_traces / name).read_bytes()
    text = bytes(decompress(name, data))
    packed = data if data[:2] == b"\x1f\x8b" else gzip.compress(text)
    streamed = stream.load_streaming(name, packed)
    assert streamed is not None, "every trace Kineto writes is streamed"
    assert _typed(streamed) == _typed(_whole(name, text))


def test_events_cut_at_every_byte_read_the_same(shared_traces: Path) -> None:
    """A one-byte read-ahead and 7-byte compressed feeds: every event, key and number of
    the array is cut by the window's end somewhere, and read again whole."""
    name = "hta_alexnet_a100.json.gz"
    text = bytes(decompress(name, (shared_traces / name).read_bytes()))
    expected = _typed(_whole("t.json.gz", text))
    for low, feed in ((1, 7), (5, 1000), (333, 3)):
        got = _streamed(text, low, feed)
        assert got is not None and _typed(got) == expected, (low, feed)


def test_an_event_longer_than_the_window_is_read_whole() -> None:
    big = {**_OP, "args": {"note": "x" * 300_000}}
    text = json.dumps({"traceEvents": [big, big], "after": [1, 2]}).encode()
    got = _streamed(text)
    assert got is not None
    assert _typed(got) == _typed(_whole("t.json.gz", text))
    assert got.ops[0].args["note"] == "x" * 300_000


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    events=st.lists(_events, min_size=1, max_size=6),
    low=st.integers(1, 40),
    indent=st.sampled_from([None, 1]),
)
def test_random_documents_stream_as_they_read_whole(
    events: list[dict[str, Any]], low: int, indent: int | None
) -> None:
    text = json.dumps({"traceEvents": events, "x": {"y": [1]}}, indent=indent).encode()
    try:
        expected = _whole("t.json.gz", text)
    except Exception as exc:  # the whole read raises: streaming raises the same, or hands back
        try:
            assert _streamed(text, low, 5) is None
        except type(exc) as again:
            assert str(again) == str(exc)
        return
    got = _streamed(text, low, 5)
    if got is not None:  # None: handed back, and the whole read gives `expected` as before
        assert expected is not None
        assert _typed(got) == _typed(expected)


HANDED_BACK = {
    "events alone": b'[{"ph": "X"}]',
    "no events": b'{"schemaVersion": 1}',
    "an escaped key": _raw('"ph":"X","c\\u0061t":"cpu_op","name":"a","ts":1,"dur":1'),
    "invalid JSON after the events": _doc() + b"}",
    "a [memory] event the scanner hands over raw": _raw(
        '"ph":"i","cat":"cpu_instant_event","name":"[memory]","ts":5,"args":{"Bytes":1.5,"Addr":1}'
    ),
}


@pytest.mark.parametrize("case", sorted(HANDED_BACK))
def test_other_documents_are_read_whole_as_before(case: str, tmp_path: Path) -> None:
    text = HANDED_BACK[case]
    assert _streamed(text) is None
    path = tmp_path / "t.json"
    path.write_bytes(text)
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(text))
    try:
        expected: Any = load_trace(path)
    except TraceError as exc:
        with pytest.raises(TraceError) as raised:
            load_trace(packed)
        assert str(raised.value).replace(".gz", "") == str(exc)
        return
    got, want = _typed(load_trace(packed)), _typed(expected)
    assert (got.pop("path"), want.pop("path")) == (str(packed), str(path))
    assert got == want


def test_gzip_that_is_not_one_whole_member_is_read_whole() -> None:
    text = _doc(_OP)
    two = gzip.compress(text[:20]) + gzip.compress(text[20:])
    assert stream.load_streaming("t.json.gz", two) is None
    assert load_trace_bytes("t.json.gz", two).ops  # the whole read joins the members
    cut = gzip.compress(text * 50)
    cut = cut[: len(cut) // 2] + zlib.compress(b"")[-4:]
    assert stream.load_streaming("t.json.gz", cut) is None
    with pytest.raises(TraceError, match="truncated or corrupt"):
        load_trace_bytes("t.json.gz", cut)


def test_a_streamed_trace_never_holds_the_inflated_document(shared_traces: Path) -> None:
    """The point of streaming: the spans' args are copies (a quarter of the bytes), and the
    inflated document is never held whole, as the whole read holds it to the end (the
    difference in peak traced memory is about half the document: the other half is the args
    copied and the spans)."""
    name = "hta_recsys_a100_rank0.json.gz"
    data = (shared_traces / name).read_bytes()
    size = int.from_bytes(data[-4:], "little")

    def peak(load: Any) -> int:
        tracemalloc.start()
        try:
            trace = load()
            assert trace is not None
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole = peak(lambda: fastload.load_fast(name, decompress(name, data, writable=False)))
    streamed = peak(lambda: stream.load_streaming(name, data))
    assert whole - streamed > 0.4 * size, (whole, streamed, size)  # measured: 0.52
