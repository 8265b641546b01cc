"""The fast reader streams every input form: events cut at every byte by its window, any
piece of the inflated document read at a time, multi-member gzip, plain JSON, bare arrays; ``--steps`` as a
window over the same stream; and the document is never held whole. The two readers agree
on all of it (``test_ingest_readers.py`` holds them equal on documents)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import tracemalloc
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_ingest_readers import _OP, _doc, _events, _typed, fast_only, reference
from torchscope.analysis.engine import analyze
from torchscope.analysis.index.context import build_context
from torchscope.analysis.measure.efficiency import measure_efficiency
from torchscope.ingest import KINETO, EventModel, Trace, TraceError, accel, load_trace, source
from torchscope.ingest.kineto import CATEGORIES, DEVICE_KINDS, KINDS
from torchscope.ingest.memory import MEMORY_BASE, Budget, check_memory, memory_limit
from torchscope.ingest.values import shapes_key

pytestmark = pytest.mark.skipif(
    accel.native is None and shutil.which("cc") is None, reason="no C compiler: not built"
)

ALEXNET = "hta_alexnet_a100.json.gz"
DDP = "hta_ddp_v100_rank1.json.gz"


class _ShortReads:
    """A gzip reader that inflates at most ``most`` bytes a read (ISA-L's and stdlib's readers
    fill each read; a short one must read the same)."""

    def __init__(self, raw: Any, most: int) -> None:
        self._inner = gzip.GzipFile(fileobj=raw, mode="rb")
        self._most = most

    def read(self, n: int) -> bytes:
        return self._inner.read(min(n, self._most))

    def close(self) -> None:
        self._inner.close()


def _gz_fast(text: bytes, low: int, most: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(source, "_gzip_reader", lambda raw: _ShortReads(raw, most))
    packed = gzip.compress(text)
    return fast_only(packed, low)


def test_events_cut_at_every_byte_read_the_same(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-byte read-ahead and short reads of the inflated document: every event, key and
    number of the array is cut by the window's end somewhere, and read again whole."""
    text = gzip.decompress((shared_traces / ALEXNET).read_bytes())
    expected = _typed(reference(text, monkeypatch))
    for low, most in ((1, 101), (5, 16_000), (333, 45)):
        got = _gz_fast(text, low, most, monkeypatch)
        assert got is not None and _typed(got) == expected, (low, most)
    plain = fast_only(text, 3)  # a plain file, read 3 bytes ahead
    assert plain is not None and _typed(plain) == expected


def test_an_event_longer_than_the_window_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    big = {**_OP, "args": {"note": "x" * 300_000}}
    text = json.dumps({"traceEvents": [big, big], "after": [1, 2]}).encode()
    got = fast_only(text)
    assert got is not None
    assert _typed(got) == _typed(reference(text, monkeypatch))
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
def test_random_documents_stream_as_the_reference_reads_them(
    events: list[dict[str, Any]], low: int, indent: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"traceEvents": events, "x": {"y": [1]}}, indent=indent).encode()
    try:
        expected = _typed(reference(text, monkeypatch))
    except TraceError as exc:  # the fast reader raises the same, or hands the document back
        try:
            assert _gz_fast(text, low, 5, monkeypatch) is None
        except TraceError as again:
            assert str(again) == str(exc)
        return
    got = _gz_fast(text, low, 5, monkeypatch)
    if got is not None:  # None: handed back, and the reference reader reads it
        assert _typed(got) == expected


def test_multi_member_gzip_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _doc(_OP, dict(_OP, ts=20))
    two = gzip.compress(text[:20]) + gzip.compress(text[20:])
    got = fast_only(two)
    assert got is not None
    assert _typed(got) == _typed(reference(text, monkeypatch))
    assert len(load_trace(two).ops) == 2


@pytest.mark.parametrize(
    "damage",
    [
        lambda packed: packed[: len(packed) // 2],
        lambda packed: packed[: len(packed) // 2] + zlib.compress(b"")[-4:],
        lambda packed: packed + b"garbage after the member",
        lambda packed: packed[:30] + bytes(b ^ 0x55 for b in packed[30:60]) + packed[60:],
    ],
    ids=["cut", "cut, odd trailer", "trailing garbage", "corrupt"],
)
def test_damaged_gzip_is_one_clear_error(damage: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    packed = damage(gzip.compress(_doc(*[dict(_OP, ts=t) for t in range(500)])))
    with pytest.raises(TraceError, match=r"t\.json\.gz: the gzip data is truncated or corrupt"):
        load_trace(packed, name="t.json.gz")
    with pytest.raises(TraceError, match=r"truncated or corrupt"):
        reference(packed, monkeypatch, "t.json.gz")


def test_inflating_without_isal_gives_the_same_trace(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _typed(load_trace(shared_traces / ALEXNET))
    monkeypatch.setattr(source, "_gzip_reader", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"))
    assert _typed(load_trace(shared_traces / ALEXNET)) == expected


@pytest.mark.parametrize("packed", [True, False], ids=["json.gz", "json"])
def test_a_trace_is_never_held_whole(
    shared_traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packed: bool
) -> None:
    """The point of streaming: the spans' args are copies (a quarter of the bytes), and the
    document is never held whole, as the reference reader holds it (the difference in peak
    traced memory is about half the document: the other half is the args copied and the
    spans)."""
    data = (shared_traces / "hta_recsys_a100_rank0.json.gz").read_bytes()
    text = gzip.decompress(data)
    path = tmp_path / ("t.json.gz" if packed else "t.json")
    path.write_bytes(data if packed else text)

    def peak(native: bool) -> int:
        with monkeypatch.context() as m:
            if not native:
                m.setattr(accel, "native", None)
            tracemalloc.start()
            try:
                assert load_trace(path).ops
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

    whole, streamed = peak(False), peak(True)
    assert whole - streamed > 0.4 * len(text), (whole, streamed, len(text))


@pytest.mark.parametrize("native", [True, False], ids=["fast", "reference"])
def test_steps_keep_only_the_chosen_steps(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    whole = load_trace(shared_traces / DDP)
    if not native:
        monkeypatch.setattr(accel, "native", None)
    part = load_trace(shared_traces / DDP, steps=(3, 4))
    steps = sorted(a.name for a in part.annotations if a.name.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#3", "ProfilerStep#4"]
    ann = {a.name: a for a in whole.annotations}
    lo, hi, next_end = (
        ann["ProfilerStep#3"].start,
        ann["ProfilerStep#4"].end,
        ann["ProfilerStep#5"].end,
    )
    assert [o[:4] for o in part.ops] == [o[:4] for o in whole.ops if lo <= o.start < hi]
    assert [r[:4] for r in part.runtime] == [r[:4] for r in whole.runtime if lo <= r.start < hi]
    assert [k[:4] for k in part.kernels] == [
        k[:4] for k in whole.kernels if lo <= k.start < next_end
    ]
    assert 0 < len(part.kernels) < len(whole.kernels)
    assert len(analyze(part).steps) == 2


def test_steps_read_alike_by_both_readers(
    shared_traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = load_trace(shared_traces / DDP, steps=(2, 3))
    monkeypatch.setattr(accel, "native", None)
    assert _typed(fast) == _typed(load_trace(shared_traces / DDP, steps=(2, 3)))


def test_steps_outside_the_trace_name_the_steps_it_has(shared_traces: Path) -> None:
    with pytest.raises(TraceError, match=r"no ProfilerStep#40\.\.#50.*holds steps 2\.\.6"):
        load_trace(shared_traces / DDP, steps=(40, 50))
    with pytest.raises(TraceError, match=r"--steps needs ProfilerStep#N annotations"):
        load_trace(_doc(_OP), steps=(1, 2))


def test_a_trace_is_refused_only_when_it_needs_more_memory_than_there_is() -> None:
    # No size is refused as such: 4 GiB of JSON is analysed whole where 16 GiB is available.
    check_memory("big.json", 4 << 30, available=Budget(16 << 30, "16.0 GB is available"))
    with pytest.raises(TraceError) as refused:
        check_memory("big.json", 2**30, available=Budget(1 << 29, "0.5 GB is available"))
    message = str(refused.value)
    assert message.startswith("big.json: too large to analyse whole on this machine: 1.0 GB of")
    assert "needs about 627.2 MB of memory (0.55× its size + 64.0 MB)" in message, message
    assert "and 0.5 GB is available" in message
    assert "--steps FIRST-LAST (e.g. --steps 10-20)" in message
    assert "a machine with more memory" in message


def test_a_large_plain_trace_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: 1 GiB on paper, nothing on disk
        fh.truncate(2**30)
    with memory_limit(MEMORY_BASE + 2**20), pytest.raises(TraceError) as refused:
        load_trace(big)
    message = str(refused.value)
    assert "big.json: too large to analyse whole" in message and "1.0 GB of JSON" in message
    assert "the analysis may take 65.0 MB (torchscope.maxMemory" in message, message
    assert "--steps" in message


def test_a_gzip_trace_whose_size_cannot_be_told_is_checked_as_it_inflates(
    shared_traces: Path, tmp_path: Path
) -> None:
    # Two gzip members: the trailer names only the last one's size (2 bytes), so the check
    # before reading passes; the check every 64 MiB read refuses it.
    doc = json.loads(gzip.decompress((shared_traces / DDP).read_bytes()))
    body = json.dumps(doc.pop("traceEvents"), separators=(",", ":")).encode()[1:-1]
    head = json.dumps(doc).encode()[:-1] + b',"traceEvents":['
    big = tmp_path / "members.json.gz"
    big.write_bytes(gzip.compress(head + body + b"," + body, 1) + gzip.compress(b"]}"))
    with memory_limit(MEMORY_BASE + (20 << 20)), pytest.raises(TraceError) as refused:
        load_trace(big)
    message = str(refused.value)
    assert re.search(
        r"too large to analyse whole on this machine: more than 6\d\.\d MB of", message
    )
    assert "the analysis may take 84.0 MB" in message and "--steps" in message, message


def test_origin_is_the_first_complete_event_not_a_metadata_timestamp() -> None:
    # Absolute epoch µs as floats resolve only 0.25 µs: subtracting the first X event's ts
    # keeps a 1.2 µs kernel 1.2 µs. A metadata event with ts 0 must not become the origin.
    t0 = 1_695_835_542_514_261.3
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t0 + 2}
    kernel.update(dur=1.2, args={"device": 0, "stream": 7, "correlation": 3})
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "x"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": t0, "dur": 5},
        kernel,
    ]
    trace = load_trace(_doc(*events))
    (k,) = trace.kernels
    assert k.end - k.start == pytest.approx(1.2, abs=1e-9)
    assert trace.ops[0].start == 0
    assert k.correlation == 3


def test_entries_that_are_not_events_are_counted_as_skipped() -> None:
    events: list[Any] = [_OP, 7, "text", {"no": "phase"}, {**_OP, "ts": "late"}, [1, 2]]
    trace = load_trace(_doc(*events))
    assert trace.skipped_events == 5
    assert [s.name for s in trace.ops] == ["aten::mm"]


def test_args_objects_pass_through_unchanged() -> None:
    args = {"Input Dims": [[2, 3]], "nested": {"deep": {"x": 1}}, "External id": 4}
    props = [{"id": 0, "name": "GPU", "major": 8}]
    trace = load_trace(_doc(dict(_OP, args=args), deviceProperties=props))
    assert trace.ops[0].args == args
    assert trace.meta["deviceProperties"] == props


def test_shapes_key_ignores_ids_and_sees_shapes() -> None:
    def args(a: dict[str, Any]) -> Any:
        return load_trace(_doc(dict(_OP, args=a))).ops[0].args

    a = args({"Input Dims": [[2, 2]], "Input type": ["float"], "External id": 1})
    b = args({"External id": 9, "Input Dims": [[2, 2]], "Input type": ["float"]})
    c = args({"Input Dims": [[2, 3]], "Input type": ["float"], "External id": 1})
    assert shapes_key(a) == shapes_key(b) != shapes_key(c)
    assert shapes_key({"Input Dims": [[2, 2]]}) is None  # a plain dict: no key


@pytest.mark.parametrize(
    "name",
    ["tracelens_bert_small_h100_torch26.json.gz", "kineto_resnet50_train_workers0_v100.json.gz"],
)
def test_memoised_work_equals_the_work_of_each_call(
    shared_traces: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The efficiency stage computes each distinct (name, shapes) once on the fast reader's
    args; the reference reader's plain dicts compute every call: the same work per op."""
    fast = load_trace(shared_traces / name)
    slow = reference(shared_traces / name, monkeypatch)
    work_fast = measure_efficiency(build_context(fast, None)).work
    work_slow = measure_efficiency(build_context(slow, None)).work
    assert work_fast and work_fast == work_slow


# The recipe "a category with a kind of its own, and an args key read at load" of
# docs/design-notes.md, followed once: the event model (kineto.py) and the types (model.py)
# change, no reader does.
class _Span(NamedTuple):
    start: float
    end: float
    name: str
    track: int
    args: Any
    correlation: object = None
    external_id: object = None


@dataclass
class _Trace(Trace):
    npu_kernels: list[Any] = field(default_factory=list)


_MODEL = EventModel(
    kinds=(*KINDS, "npu_kernels"),
    categories={**CATEGORIES, "npu_kernel": "npu_kernels"},
    device_kinds=DEVICE_KINDS | {"npu_kernels"},
    span_keys=("correlation", "External id"),
    span_type=_Span,
    trace_type=_Trace,
)


def test_a_new_kind_and_args_key_need_no_reader_change(monkeypatch: pytest.MonkeyPatch) -> None:
    npu = {"ph": "X", "cat": "npu_kernel", "name": "n", "pid": 3, "tid": 4, "ts": 12, "dur": 2}
    npu["args"] = {"External id": 7, "correlation": 5, "stream": 4, "device": 1}
    text = _doc(dict(_OP, args={"External id": 7}), npu)
    got = load_trace(text, model=_MODEL)
    assert isinstance(got, _Trace)
    (span,) = got.npu_kernels
    assert (span.external_id, span.correlation, got.tracks[span.track].device) == (7, 5, 1)
    assert got.ops[0].external_id == 7
    with monkeypatch.context() as m:
        m.setattr(accel, "native", None)
        assert _typed(load_trace(text, model=_MODEL)) == _typed(got)
    assert load_trace(text, model=KINETO).kernels == []  # the default model is untouched
