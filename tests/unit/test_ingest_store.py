"""The fast reader keeps a trace compactly (``_native_span.c``, ``_native_memory.c``,
``_native_store.c``): each span in 64 bytes, each ``[memory]`` event in 64, the args bytes
set aside in a temporary file that goes with the trace, and a clear message when that file
cannot be made or filled."""

from __future__ import annotations

import gc
import os
import pickle
import sys
import tempfile
from pathlib import Path

import pytest

from torchscope.ingest import MemoryEvent, Span, TraceError, accel, load_trace

DATA = Path(__file__).parents[1] / "data" / "traces"
TRACE = DATA / "hta_ddp_nccl_a100_rank0.json.gz"

pytestmark = pytest.mark.skipif(accel.native is None, reason="the C scanner is not built")


def _deleted_files() -> set[str]:
    """This process's open files whose name is gone (a temporary file, unlinked)."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.endswith("(deleted)"):
            out.add(fd)
    return out


def test_spans_are_compact_and_their_args_are_read_back() -> None:
    before = _deleted_files()
    trace = load_trace(TRACE)
    spans = [*trace.ops, *trace.runtime, *trace.kernels]
    assert accel.native is not None and {type(s) for s in spans} == {accel.native.Span}
    assert max(map(sys.getsizeof, spans)) <= 64
    kernel = next(k for k in trace.kernels if k.args)
    assert kernel.args["correlation"] == kernel.correlation == kernel[5]
    assert Span(*kernel) == kernel and tuple(kernel) == tuple(Span(*kernel))
    assert pickle.loads(pickle.dumps(kernel)) == kernel  # its args travel as their dict
    assert len(_deleted_files() - before) == 1  # the args, set aside
    del trace, spans, kernel
    gc.collect()
    assert _deleted_files() <= before  # gone with the trace: nothing left on disk


def test_args_read_back_in_any_order_are_the_reference_readers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read back through a 64 KiB block (``store_get``): forwards, backwards and jumping
    about, every span's args are what the reference reader decoded."""
    path = DATA / "hta_ddp_v100_rank1.json.gz"
    fast = load_trace(path)
    with monkeypatch.context() as m:
        m.setattr(accel, "native", None)
        reference = load_trace(path)
    order = list(range(len(fast.ops)))
    jumping = order[::7] + order[3::7] + order[1::7]
    for indices in (order[::-1], jumping, order):
        assert all(dict(fast.ops[i].args) == reference.ops[i].args for i in indices)


def test_memory_events_are_compact_and_read_as_the_reference_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = DATA / "tracelens_bert_small_h100_torch26.json.gz"
    fast = load_trace(path).memory
    with monkeypatch.context() as m:
        m.setattr(accel, "native", None)
        reference = load_trace(path).memory
    assert accel.native is not None and {type(e) for e in fast} == {accel.native.MemoryEvent}
    assert max(map(sys.getsizeof, fast)) <= 64
    assert fast == reference and len(fast) > 100
    one = fast[0]
    assert (one.ts, one.track, one.bytes, one.addr, one.device_type, one.device_id) == one[:]
    assert pickle.loads(pickle.dumps(one)) == one == MemoryEvent(*one)


def test_no_temporary_folder_is_one_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.raises(TraceError, match=r"cannot create one in .*gone.*set TMPDIR"):
        load_trace(TRACE)
