"""The two readers agree: the fast reader (the C scanner over the document as it streams,
``ingest/fast.py``) gives the reference reader's trace (stdlib ``json`` with the Python rule,
``ingest/reference.py``) on every document it takes, and hands every other document back
(``None``) for the reference reader to read. The other C parts:
``test_analysis_native_parts.py``; the stream's edges: ``test_ingest_stream.py``."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchscope.ingest import KINETO, Trace, TraceError, accel, fast, load_trace
from torchscope.ingest.sink import EventSink
from torchscope.ingest.source import Document

# Without a compiler there is no extension to compare with its twins (they run alone, and
# every other test covers them); with one, test_the_extension_is_built insists on it.
pytestmark = pytest.mark.skipif(
    accel.native is None and shutil.which("cc") is None, reason="no C compiler: not built"
)

TRACES = sorted(p.name for p in (Path(__file__).parents[1] / "data" / "traces").glob("*.json*"))


def _typed(trace: Trace) -> dict[str, Any]:
    """The trace's fields, with each span's numbers' types (``1 == 1.0`` would hide a
    float where the other reader kept an int) and its args as a plain dict."""
    out = dict(vars(trace))
    for key, value in out.items():
        if isinstance(value, list) and value and hasattr(value[0], "args"):
            out[key] = [
                (
                    s.start,
                    s.end,
                    type(s.start),
                    type(s.end),
                    s.name,
                    s.track,
                    dict(s.args),
                    s.correlation,
                    type(s.correlation),
                )
                for s in value
            ]
    out["tracks"] = [(t, type(t.pid), type(t.tid)) for t in trace.tracks]
    out["memory"] = [(m, type(m.ts)) for m in trace.memory]
    return out


def reference(source: Any, monkeypatch: pytest.MonkeyPatch, name: str = "t.json") -> Trace:
    """The reference reader's trace (the C part switched off, as TORCHSCOPE_NO_NATIVE does)."""
    with monkeypatch.context() as m:
        m.setattr(accel, "native", None)
        return load_trace(source, name=name)


def fast_only(text: bytes, low: int = fast.LOW, window: Any = None) -> Trace | None:
    """The fast reader's trace, or None where it hands the document back."""
    sink = EventSink(KINETO, window)
    got = fast.scan(Document(io.BytesIO(text), "t.json"), sink, low)
    return None if got is None else sink.finish("t.json", *got)


def _reads_as_the_reference(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole load gives the reference reader's trace or exception."""
    try:
        expected: Any = reference(text, monkeypatch)
    except Exception as exc:  # what the reference raised, the whole load must raise too
        with pytest.raises(type(exc)) as raised:
            load_trace(text, name="t.json")
        assert str(raised.value) == str(exc)
        return
    assert _typed(load_trace(text, name="t.json")) == _typed(expected)


def test_the_extension_is_built() -> None:
    """The install builds it wherever a C compiler is found (``pip install -e .``); without
    it every trace is still read, by the reference reader, but slower."""
    assert accel.native is not None or shutil.which("cc") is None, (
        "ingest/_native*.c was not built though a C compiler is here: run pip install -e ."
    )


@pytest.mark.parametrize("name", TRACES)
def test_every_shared_trace_is_read_alike_by_both_readers(
    shared_traces: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_traces / name
    sink = EventSink(KINETO)
    with open(path, "rb") as fh:
        got = fast.scan(Document(fh, name), sink)
    assert got is not None, "the fast reader takes every trace Kineto writes"
    assert _typed(sink.finish(str(path), *got)) == _typed(reference(path, monkeypatch, str(path)))


def _doc(*events: dict[str, Any], **top: Any) -> bytes:
    return json.dumps({"traceEvents": list(events), **top}).encode()


_OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5}


def _raw(op_fields: str) -> bytes:
    """A document whose first event is written by hand (escapes, duplicate keys, numbers
    exactly as given), followed by a plain op."""
    plain = json.dumps(_OP)
    return b'{"traceEvents": [{' + op_fields.encode() + b"}, " + plain.encode() + b"]}"


# Documents the fast reader takes, each probing one rule it shares with the reference.
TAKEN = {
    "floats": _raw('"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10.125,"dur":0.5'),
    "many digits": _raw('"ph":"X","cat":"kernel","name":"k","ts":1712195495406752.797,"dur":1e-1'),
    "exponent": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":1E2,"dur":2.5e+1'),
    "negative zero": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":-0,"dur":-0.0'),
    "no dur": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11'),
    "escaped name": _raw('"ph":"X","cat":"cpu_op","name":"a\\"b\\u00e9\\n","ts":11,"dur":1'),
    "utf-8 name": _raw('"ph":"X","cat":"cpu_op","name":"\u00e9\u4e2d","ts":11,"dur":1'),
    "repeated key": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"ts":12.5,"dur":1'),
    "string ids": _raw('"ph":"X","cat":"kernel","name":"k","pid":"0","tid":"stream 7","ts":1'),
    "null ids": _raw('"ph":"X","cat":"cpu_op","name":"a","pid":null,"ts":11,"dur":1'),
    "args null": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"dur":1,"args":null'),
    "args a list": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"dur":1,"args":[1]'),
    "args a string": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"dur":1,"args":"x"'),
    "args empty": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"dur":1,"args":{}'),
    "correlation float": _raw(
        '"ph":"X","cat":"kernel","name":"k","ts":11,"args":{"correlation":1.5}'
    ),
    "correlation str": _raw(
        '"ph":"X","cat":"kernel","name":"k","ts":11,"args":{"correlation":"7"}'
    ),
    "correlation twice": _raw(
        '"ph":"X","cat":"kernel","name":"k","ts":11,"args":{"correlation":1,"correlation":2}'
    ),
    "correlation nested": _raw(
        '"ph":"X","cat":"kernel","name":"k","ts":11,"args":{"a":{"correlation":3}}'
    ),
    "big correlation": _raw(
        '"ph":"X","cat":"kernel","name":"k","ts":11,"args":{"correlation":123456789012345678901234}'
    ),
    "no cat": _raw('"ph":"X","name":"a","ts":11,"dur":1'),
    "unknown cat": _raw('"ph":"X","cat":"ac2g","name":"a","ts":11,"dur":1'),
    "no name": _raw('"ph":"X","cat":"cpu_op","ts":11,"dur":1'),
    "no ts": _raw('"ph":"X","cat":"cpu_op","name":"a","dur":1'),
    "negative dur": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"dur":-5'),
    "huge ts": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":1e300,"dur":1'),
    "no ph": _raw('"cat":"cpu_op","name":"a","ts":11,"dur":1'),
    "other ph": _raw('"ph":"f","id":4,"bp":"e","cat":"ac2g","name":"ac2g","ts":1'),
    "legacy": _raw('"ph":"X","cat":"Operator","name":"ProfilerStep#3","ts":11,"dur":9'),
    "line marker": _raw('"ph":"X","cat":"cpu_op","name":"torchscope:L12","ts":11,"dur":9'),
    "overhead": _raw('"ph":"X","cat":"Trace","name":"CUPTI Overhead","ts":11,"dur":9'),
    "thread name": _raw('"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"main"}'),
    "memory": _raw(
        '"ph":"i","name":"[memory]","pid":1,"tid":2,"ts":12,"args":{"Bytes":8,"Addr":1}'
    ),
    "memory, all fields": _raw(
        '"ph":"i","name":"[memory]","pid":1,"tid":2,"ts":12.5,"args":{"Device Type":1,'
        '"Device Id":0,"Bytes":-8,"Addr":139926520725504,"Total Allocated":5435638784}'
    ),
    "memory, another thread": _raw(
        '"ph":"i","name":"[memory]","pid":1,"tid":9,"ts":3,"args":{"Bytes":1,"Bytes":2}'
    ),
    "memory, origin zero": _doc(
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 4, "args": {"Bytes": 4}},
        dict(_OP, ts=0),
    ),
    "memory, origin 0.0": _doc(
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 4, "args": {"Bytes": 4}},
        dict(_OP, ts=0.0),
    ),
    "memory, origin float": _doc(
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 2, "ts": 4, "args": {"Bytes": 4}},
        dict(_OP, ts=1.5),
    ),
    "deep args": _raw(
        '"ph":"X","cat":"cpu_op","name":"a","ts":11,"args":{"a":' + "[" * 40 + "]" * 40 + "}"
    ),
    "odd characters skipped": _raw(
        '"ph":"X","cat":"cpu_op","name":"a","ts":11,"zz":"\x7f\\/\\b","args":{"s":"\\t"}'
    ),
    "a list after the events": _doc(_OP, dict(_OP, ts=20), after=[1, {"x": [2]}]),
    "a bare array of events": json.dumps([_OP, dict(_OP, ts=20)]).encode(),
    "a plain file": _doc(_OP, dict(_OP, ts=20), schemaVersion=1),
}


@pytest.mark.parametrize("case", sorted(TAKEN))
def test_taken_documents_read_as_the_reference_reads_them(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = TAKEN[case]
    got = fast_only(text)
    assert got is not None, "the fast reader should take this document"
    assert _typed(got) == _typed(reference(text, monkeypatch))


# Documents it hands back: the reference reader judges them.
HANDED_BACK = {
    "escaped key": _raw('"p\\u0068":"X","cat":"cpu_op","name":"a","ts":11'),
    "surrogate pair": _raw('"ph":"X","cat":"cpu_op","name":"\\ud83d\\ude00","ts":11'),
    "lone surrogate": _raw('"ph":"X","cat":"cpu_op","name":"a","zz":"\\ud83d","ts":11'),
    "big ts": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":123456789012345678901'),
    "float pid": _raw('"ph":"X","cat":"cpu_op","name":"a","pid":1.5,"ts":11'),
    "bool ts": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":true'),
    "string ts": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":"11"'),
    "null name": _raw('"ph":"X","cat":"cpu_op","name":null,"ts":11'),
    "bad utf-8 name": b'{"traceEvents": [{"ph":"X","cat":"cpu_op","name":"\xff","ts":11}]}',
    "overflowing float": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":1e999'),
    "control character": _raw('"ph":"X","cat":"cpu_op","name":"a\tb","ts":11'),
    "trailing comma": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,'),
    "bad number": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":01'),
    "bad literal": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"zz":nul'),
    "not an object": b'{"traceEvents": [1, 2]}',
    "too deep": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,"zz":' + "[" * 70 + "]" * 70),
    "memory, no ts": _raw('"ph":"i","name":"[memory]","pid":1,"tid":2,"args":{"Bytes":8}'),
    "memory, odd args": _raw('"ph":"i","name":"[memory]","ts":12,"args":[1]'),
    "memory, float bytes": _raw('"ph":"i","name":"[memory]","ts":12,"args":{"Bytes":8.0}'),
    "memory, no bytes": _raw('"ph":"i","name":"[memory]","ts":12,"args":{"Addr":3}'),
    "no events": b'{"schemaVersion": 1}',
    "empty events": b'{"traceEvents": []}',
    "invalid JSON after the events": _doc(_OP) + b"}",
    "NaN": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":NaN'),
    "Infinity": _raw('"ph":"X","cat":"cpu_op","name":"a","ts":Infinity'),
    "only Infinity": b'{"traceEvents": [{"ph":"X","cat":"cpu_op","name":"a","ts":Infinity}]}',
    "a BOM": b"\xef\xbb\xbf" + _doc(_OP),
}


@pytest.mark.parametrize("case", sorted(HANDED_BACK))
def test_other_documents_are_handed_to_the_reference_reader(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = HANDED_BACK[case]
    assert fast_only(text) is None
    _reads_as_the_reference(text, monkeypatch)


def test_a_trace_of_non_finite_times_is_told_so_by_both_readers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not "none of its events has a Kineto category": the event has one, but its time is
    NaN or ±Infinity (stdlib json reads them; the fast reader hands such documents back)."""
    text = HANDED_BACK["only Infinity"]
    message = "t.json: nothing to analyse: event 0 has a non-finite timestamp (ts: Infinity)"
    for read in (lambda: load_trace(text, name="t.json"), lambda: reference(text, monkeypatch)):
        with pytest.raises(TraceError) as raised:
            read()
        assert str(raised.value) == message


# Random events: each field absent or present, mostly of the type Kineto writes (so most
# documents are scanned), sometimes of another type (so some are handed back).
_exact = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.floats(-1e20, 1e20, allow_nan=False),
    st.sampled_from([0, -0.0, 1.5, 1e-7, 1712195495406752.797, 10**15, 2.5e17]),
)
_names = st.one_of(
    st.sampled_from(
        [
            "X",
            "M",
            "i",
            "f",
            "cpu_op",
            "kernel",
            "Operator",
            "ProfilerStep#1",
            "thread_name",
            "[memory]",
            'a"\\b\u00e9',
            "torchscope:L3",
            "CUPTI Overhead",
            "",
        ]
    ),
    st.text(max_size=6),
)
_odd = st.one_of(st.none(), st.booleans(), st.integers(2**53, 2**64), _exact, _names)
_ids = st.one_of(st.integers(0, 3), st.sampled_from(["0", "stream 7"]), st.none())
_args = st.one_of(
    st.dictionaries(
        st.sampled_from(["correlation", "name", "Bytes", "Addr", "device", "stream", "x"]),
        st.one_of(st.integers(-5, 2**40), _names, _exact, st.lists(_exact, max_size=2)),
        max_size=4,
    ),
    st.none(),
    _odd,
)
_kineto = {
    "ph": st.sampled_from(["X", "X", "X", "M", "i", "s"]),
    "cat": st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "Operator", "Trace", "ac2g"]),
    "name": st.sampled_from(["aten::mm", "thread_name", "[memory]", "ProfilerStep#2", "é"]),
    "pid": _ids,
    "tid": _ids,
    "ts": st.one_of(st.integers(0, 100), _exact),
    "dur": st.one_of(st.integers(-2, 10), _exact),
    "args": _args,
}
_REQUIRED = ("ph", "cat", "name", "ts")
_events = st.one_of(
    st.fixed_dictionaries(
        {k: _kineto[k] for k in _REQUIRED},
        optional={k: v for k, v in _kineto.items() if k not in _REQUIRED},
    ),
    st.fixed_dictionaries({}, optional=_kineto),
    st.fixed_dictionaries({}, optional={k: st.one_of(v, _odd) for k, v in _kineto.items()}),
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(events=st.lists(_events, min_size=1, max_size=6), bare=st.booleans())
def test_random_documents_read_as_the_reference_reads_them(
    events: list[dict[str, Any]], bare: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps(events if bare else {"traceEvents": events}).encode()
    _reads_as_the_reference(text, monkeypatch)
