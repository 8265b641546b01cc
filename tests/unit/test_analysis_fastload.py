"""msgspec's typed decode (``fastload``) gives the same trace as the stdlib ``json`` path, falls
back to it for documents with odd field types, and ``--steps`` (``window``) keeps exactly the
chosen steps of a trace, decoding it a chunk at a time."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import TraceError, accel, fastload, lazyjson, parse
from torchscope.analysis.context import build_context
from torchscope.analysis.efficiency import measure_efficiency
from torchscope.analysis.engine import analyze
from torchscope.analysis.load import load_trace, load_trace_bytes
from torchscope.analysis.model import Trace
from torchscope.analysis.normalise import EventSink
from torchscope.analysis.parse import check_memory, decompress, events_of, parse_json

TRACES = sorted(p.name for p in (Path(__file__).parents[1] / "data" / "traces").glob("*.json*"))


def _stdlib(name: str, text: bytes) -> Trace:
    sink = EventSink()
    meta, events = events_of(name, parse_json(name, text, sink.accept))
    return sink.finish(name, meta, len(events) - events.count(None))


@pytest.mark.parametrize("native", [True, False], ids=["C scan", "msgspec loop"])
@pytest.mark.parametrize("name", TRACES)
def test_fast_and_stdlib_paths_give_the_same_trace(
    shared_traces: Path, name: str, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(accel, "native", None)
    text = decompress(name, (shared_traces / name).read_bytes())
    fast = fastload.load_fast(name, text)
    assert fast is not None, "every shared trace is one the typed decode takes"
    slow = _stdlib(name, text)
    assert vars(fast) == vars(slow)
    lazy = (accel.native.Args,) if accel.native is not None else (lazyjson.LazyArgs,)
    assert any(isinstance(s.args, lazy) for s in fast.ops + fast.kernels)


def test_memory_events_are_kept_on_both_paths(shared_traces: Path) -> None:
    """``[memory]`` instant events (``profile_memory=True``) reach ``Trace.memory`` on the
    typed and the stdlib path alike, on the same clock and tracks as the spans."""
    name = "kineto_resnet50_train_workers0_v100.json.gz"
    text = decompress(name, (shared_traces / name).read_bytes())
    fast, slow = fastload.load_fast(name, text), _stdlib(name, text)
    assert fast is not None and fast.memory, "this trace was recorded with profile_memory"
    assert fast.memory == slow.memory
    assert {e.device_type for e in fast.memory} == {0, 1}  # CPU and CUDA blocks
    first_op = min(s.start for s in fast.ops)
    assert first_op - 1e6 < fast.memory[0].ts < max(s.end for s in fast.ops)


def _doc(**changes: Any) -> bytes:
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10}
    event.update({"dur": 5, "args": {"correlation": 4, "Input Dims": [[2, 2]]}})
    event.update(changes)
    plain = {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 20}
    return json.dumps({"traceEvents": [event, plain]}).encode()


@pytest.mark.parametrize(
    "changes",
    [{"ts": "10"}, {"pid": 1.5}, {"args": [1, 2]}, {"name": None}, {"ph": None}, {"dur": True}],
)
def test_odd_field_types_take_the_stdlib_path(changes: dict[str, Any]) -> None:
    text = _doc(**changes)
    assert fastload.load_fast("odd.json", text) is None or changes == {"args": [1, 2]}
    try:
        expected: Trace | str = _stdlib("odd.json", text)
    except TraceError as exc:
        expected = str(exc)
    try:
        got: Trace | str = load_trace_bytes("odd.json", text)
    except TraceError as exc:
        got = str(exc)
    assert (vars(got) if isinstance(got, Trace) else got) == (
        vars(expected) if isinstance(expected, Trace) else expected
    )


@pytest.mark.parametrize("native", [True, False], ids=["C scan", "msgspec loop"])
def test_lazy_args_read_like_the_dict(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not native:
        monkeypatch.setattr(accel, "native", None)
    trace = load_trace_bytes("t.json", _doc())
    args = trace.ops[0].args
    assert isinstance(args, Mapping) and not isinstance(args, dict)
    assert trace.ops[0].correlation == 4
    assert dict(args) == {"correlation": 4, "Input Dims": [[2, 2]]}
    assert args.get("Input Dims") == [[2, 2]] and "correlation" in args and len(args) == 2
    assert trace.ops[1].args == {}


@pytest.mark.parametrize("chunk", [4096, 1 << 20])
def test_steps_keep_only_the_chosen_steps(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    name = "hta_ddp_v100_rank1.json.gz"
    data = (shared_traces / name).read_bytes()
    whole = load_trace_bytes(name, data)
    # Small chunks cut the array in many places, some of them inside args objects.
    monkeypatch.setattr(fastload, "CHUNK_BYTES", chunk)
    part = load_trace_bytes(name, data, steps=(3, 4))
    steps = sorted(a.name for a in part.annotations if a.name.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#3", "ProfilerStep#4"]
    ann = {a.name: a for a in whole.annotations}
    lo, hi = ann["ProfilerStep#3"].start, ann["ProfilerStep#4"].end
    assert part.ops == [o for o in whole.ops if lo <= o.start < hi]
    assert part.runtime == [r for r in whole.runtime if lo <= r.start < hi]
    assert 0 < len(part.kernels) < len(whole.kernels)
    report = analyze(part)
    assert len(report.steps) == 2


def test_steps_outside_the_trace_name_the_steps_it_has(shared_traces: Path) -> None:
    name = "hta_ddp_v100_rank1.json.gz"
    with pytest.raises(TraceError, match=r"no ProfilerStep#40\.\.#50.*holds steps 2\.\.6"):
        load_trace_bytes(name, (shared_traces / name).read_bytes(), steps=(40, 50))


def test_a_trace_too_large_for_memory_is_refused_naming_the_bound_and_steps() -> None:
    check_memory("big.json", 2**29, available=8 * 2**30)  # 1.5 GiB needed: fine
    with pytest.raises(TraceError, match=r"big\.json: too large.*1\.5 GiB.*--steps 10-20"):
        check_memory("big.json", 2**29, available=2**30)
    # From 1 GiB on, whole-trace analysis would break the 1.5× bound: refused however much
    # memory there is.
    with pytest.raises(TraceError, match=r"too large.*bound of 1\.5× the file's size.*--steps"):
        check_memory("big.json", 2**30, available=2**40)


def test_a_large_plain_trace_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: 1 GiB on paper, nothing on disk
        fh.truncate(2**30)
    with pytest.raises(TraceError, match=r"big\.json: too large.*1\.0 GiB of JSON.*--steps"):
        load_trace(big)


@pytest.mark.parametrize("writable", [True, False])
def test_gunzip_without_isal_gives_the_same_bytes(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch, writable: bool
) -> None:
    """Both ways of inflating (into a ``bytearray`` for the msgspec path's in-place decode,
    into ``bytes`` for the C scanner), with ISA-L and with zlib."""
    data = (shared_traces / "hta_alexnet_a100.json.gz").read_bytes()
    fast = parse.decompress("t", data, writable)
    assert type(fast) is (bytearray if writable else bytes)
    monkeypatch.setattr(parse, "_decompressobj", lambda: zlib.decompressobj(16 + zlib.MAX_WBITS))
    assert parse.decompress("t", data, writable) == fast == gzip.decompress(data)
    two = gzip.compress(fast[:1000]) + gzip.compress(fast[1000:])  # multi-member
    assert parse.decompress("t", two, writable) == fast


def test_a_list_after_the_events_is_found_and_the_buffer_is_left_as_it_was() -> None:
    # The quick guess (the array ends at the last "]") is wrong here: the decode of the
    # last chunk fails and the whole document is read to find the array.
    doc = json.loads(_doc())
    doc["after"] = [1, {"x": [2]}]
    text = bytearray(json.dumps(doc, indent=1).encode())
    before = bytes(text)
    fast = fastload.load_fast("after.json", text)
    assert fast is not None and fast.meta == {"after": [1, {"x": [2]}]}
    assert bytes(text) == before  # the in-place decode puts every byte back
    assert vars(fast) == vars(_stdlib("after.json", before))
    assert dict(fast.ops[0].args) == {"correlation": 4, "Input Dims": [[2, 2]]}


def test_shapes_key_ignores_ids_and_sees_shapes() -> None:
    def lazy(args: dict[str, Any]) -> Any:
        return load_trace_bytes("t.json", _doc(args=args)).ops[0].args

    a = lazy({"Input Dims": [[2, 2]], "Input type": ["float"], "External id": 1})
    b = lazy({"External id": 9, "Input Dims": [[2, 2]], "Input type": ["float"]})
    c = lazy({"Input Dims": [[2, 3]], "Input type": ["float"], "External id": 1})
    assert lazyjson.shapes_key(a) == lazyjson.shapes_key(b) != lazyjson.shapes_key(c)
    assert lazyjson.shapes_key({"Input Dims": [[2, 2]]}) is None  # a plain dict: no key


@pytest.mark.parametrize("name", ["tracelens_bert_small_h100_torch26.json.gz", "kineto_resnet50_train_workers0_v100.json.gz"])
def test_memoised_work_equals_the_work_of_each_call(shared_traces: Path, name: str) -> None:
    """The efficiency stage computes each distinct (name, shapes) once on the fast path; the
    stdlib path's plain dicts compute every call: both must give the same work per op."""
    text = decompress(name, (shared_traces / name).read_bytes())
    fast, slow = fastload.load_fast(name, text), _stdlib(name, text)
    assert fast is not None
    work_fast = measure_efficiency(build_context(fast, None)).work
    work_slow = measure_efficiency(build_context(slow, None)).work
    assert work_fast and work_fast == work_slow
