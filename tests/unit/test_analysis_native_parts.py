"""The C parts other than the scan give what their Python twins give: ``Args`` (the dict
stdlib json decodes), ``nest`` (``nesting._sweep``), ``loads`` (stdlib ``json.loads``) and
``merge`` (``intervals._merge_python``)."""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_ingest_readers import _OP, TRACES, _doc, _raw
from torchscope.analysis.index import intervals, nesting
from torchscope.ingest import Span, accel, load_trace, values

pytestmark = pytest.mark.skipif(
    accel.native is None and shutil.which("cc") is None, reason="no C compiler: not built"
)


def _args_of(fields: str) -> Any:
    trace = load_trace(_raw('"ph":"X","cat":"cpu_op","name":"a","ts":11,' + fields))
    return next(s for s in trace.ops if s.name == "a")


def test_args_read_like_the_dict_they_decode_to() -> None:
    op = _args_of('"args":{"Input Dims":[[2,2]], "correlation":4, "Input type":["float"]}')
    args = op.args
    assert accel.native is not None and isinstance(args, accel.native.Args)
    assert isinstance(args, Mapping) and not isinstance(args, dict) and op.correlation == 4
    plain = {"Input Dims": [[2, 2]], "correlation": 4, "Input type": ["float"]}
    assert args.raw() == b'{"Input Dims":[[2,2]], "correlation":4, "Input type":["float"]}'
    assert dict(args) == plain and args == plain and plain == args and (args != plain) is False
    assert args["correlation"] == 4 and args.get("x") is None and args.get("x", 7) == 7
    assert "Input Dims" in args and "x" not in args and len(args) == 3 and list(args) == list(plain)
    assert list(args.keys()) == list(plain) and list(args.values()) == list(plain.values())
    assert list(args.items()) == list(plain.items()) and repr(args) == f"Args({plain!r})"
    with pytest.raises(KeyError):
        args["x"]
    with pytest.raises(TypeError):
        hash(args)
    assert args != {"correlation": 4} and args != [1] and args != "x"
    assert args == json.loads(args.raw()) == args
    assert pickle.loads(pickle.dumps(op)).args == plain  # pickled as the plain dict
    assert values.shapes_key(args) == (b"[[2,2]]", b'["float"]', b"")


@pytest.mark.parametrize(
    "args",
    [
        '{"Input Dims":[[1]],"Input Dims":[[2, 3]],"External id":5}',
        '{ "x" : {"Input Dims": 1} , "Concrete Inputs" : ["", "2"] }',
        '{"Input type":["a\\"b\\u00e9"],"Input Dims":[]}',
        "{}",
    ],
)
def test_shapes_key_holds_the_raw_values_stdlib_json_reads(args: str) -> None:
    native = _args_of(f'"args":{args}').args
    assert accel.native is not None and isinstance(native, accel.native.Args)
    key = values.shapes_key(native)
    assert key is not None
    plain = json.loads(args)
    for raw, name in zip(key, ("Input Dims", "Input type", "Concrete Inputs")):
        assert (json.loads(raw) if raw else None) == plain.get(name)


@pytest.mark.parametrize("name", TRACES)
def test_nesting_in_c_equals_the_python_sweep(
    shared_traces: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(shared_traces / name)
    every_other = bytes([1, 0] * len(trace.runtime))[: len(trace.runtime)]
    for subset in (None, every_other):
        native = nesting._unlinked(trace)
        assert _native_nest(trace, native, subset) is True  # the C sweep took it
        with monkeypatch.context() as m:
            m.setattr(accel, "native", None)
            python = nesting.build_nesting(trace, subset)
        assert vars(native) == vars(python)
        assert list(map(type, native.op_self)) == list(map(type, python.op_self))


def test_nesting_takes_int_and_float_times_and_hands_back_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Legacy whole-µs times (ints: self times stay ints), a child sticking out of its
    parent by less than the tolerance, float times; a time Python alone can hold exactly
    (an int beyond 2**53) is handed back, and the Python sweep gives the answer."""
    doc = _doc(
        dict(_OP, ts=0, dur=100, name="outer"),
        dict(_OP, ts=10, dur=91, name="sticks out by 1"),
        dict(_OP, ts=20, dur=5.5, name="float"),
        dict(_OP, ts=30.25, dur=1, name="float start"),
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "torchscope:L3",
            "pid": 1,
            "tid": 2,
            "ts": 5,
            "dur": 50,
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 2,
            "ts": 12,
            "dur": 2,
        },
        dict(_OP, ts=200, dur=10, tid=3, name="other thread"),
    )
    trace = load_trace(doc)
    native = nesting.build_nesting(trace)
    with monkeypatch.context() as m:
        m.setattr(accel, "native", None)
        python = nesting.build_nesting(trace)
    assert vars(native) == vars(python)
    assert list(map(type, native.op_self)) == list(map(type, python.op_self))
    assert native.op_parent.count(-1) == 2  # outer, and the op on the other thread
    big = Span(*trace.ops[0])._replace(end=2**60)  # beyond a compact Span's: a tuple
    trace.ops[0] = big
    links = nesting._unlinked(trace)
    before = [list(x) for x in _columns(links)]
    assert _native_nest(trace, links, None) is None
    assert [list(x) for x in _columns(links)] == before  # handed back untouched
    # An item holds a track in 16 bits: a 65536th track goes to Python, as does a mask of
    # the runtime calls that is not a byte per call.
    trace.ops[0] = Span(*trace.ops[1])._replace(track=70_000)
    assert _native_nest(trace, links, None) is None
    trace.ops[0] = Span(*trace.ops[1])
    links = nesting._unlinked(trace)
    before = [list(x) for x in _columns(links)]
    assert _native_nest(trace, links, b"\x01" * (len(trace.runtime) + 1)) is None
    assert [list(x) for x in _columns(links)] == before
    assert _native_nest(trace, links, b"\x00" * len(trace.runtime)) is True
    assert list(links.rt_op) == [-1] * len(trace.runtime)  # no call wanted: none linked


def _columns(nest: nesting.Nesting) -> tuple[Any, ...]:
    """What ``_native.nest`` writes, in its order."""
    n = nest
    return (
        *(n.op_parent, n.op_self, n.op_ann, n.op_py),
        *(n.rt_op, n.rt_ann, n.rt_py),
        *(n.ann_parent, n.ann_op, n.ann_py, n.py_parent),
    )


def _native_nest(trace: Any, nest: nesting.Nesting, subset: bytes | None) -> bool | None:
    assert accel.native is not None
    return accel.native.nest(
        trace.annotations,
        trace.python,
        trace.ops,
        trace.runtime,
        subset,
        _columns(nest),
        nesting.NEST_TOLERANCE_US,
    )


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (``1 == 1.0 == True`` would hide one)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b) or (a != a and b != b)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    )


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    _containers,
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(value=_json, indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_loads_reads_json_values_as_stdlib_json_does(
    value: Any, indent: Any, ascii_only: bool
) -> None:
    """``_native.loads`` gives stdlib json's value, or ValueError (then stdlib decodes it)."""
    assert accel.native is not None
    data = json.dumps(value, indent=indent, ensure_ascii=ascii_only).encode()
    expected = json.loads(data)
    try:
        got = accel.native.loads(data)
    except ValueError:
        got = values.decode_json(data)  # stdlib's turn: the same value by construction
        assert _same(got, expected)
        return
    assert _same(got, expected)


@pytest.mark.parametrize(
    "text",
    [b'"a\\ud83d\\ude00"', b"123456789012345678901", b"1e400", b"[1,]", b'{"a":1', b"nul", b"1 2"],
)
def test_loads_hands_back_what_it_is_not_sure_of(text: bytes) -> None:
    assert accel.native is not None
    with pytest.raises(ValueError):
        accel.native.loads(text)


_times = st.one_of(st.integers(-(2**55), 2**55), st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pairs=st.lists(st.tuples(_times, _times), max_size=12))
def test_merge_in_c_equals_the_python_merge(pairs: list[tuple[Any, Any]]) -> None:
    """The same starts and ends, the very same objects, for ints (also beyond 2**53, where
    Python compares exactly), floats and both mixed."""
    assert accel.native is not None
    pairs.sort(key=lambda p: p[0])
    got = accel.native.merge(iter(pairs))
    expected = intervals._merge_python(pairs)
    assert got == expected
    assert all(a is b for a, b in zip(got[0] + got[1], expected[0] + expected[1]))


def test_merge_unpacks_and_fails_as_python_does() -> None:
    assert accel.native is not None
    assert accel.native.merge([[1, 2], (2, 5), range(6, 8)]) == ([1, 6], [5, 7])
    assert accel.native.merge([]) == ([], [])
    for bad in ([(1, 2, 3)], [(1, "a"), (2, 3)], [5]):
        with pytest.raises((TypeError, ValueError)) as native_error:
            accel.native.merge(bad)
        with pytest.raises(native_error.type):
            intervals._merge_python(bad)
