"""Unreadable input gets one TraceError naming the file, what is wrong and what to do."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis import TraceError, analyze_trace


def expect_error(path: Path, *words: str) -> str:
    with pytest.raises(TraceError) as info:
        analyze_trace(path)
    message = str(info.value)
    assert str(path) in message
    for w in words:
        assert w in message, message
    return message


def test_missing_file(tmp_path: Path) -> None:
    expect_error(tmp_path / "nope.json", "no such file")


def test_directory(tmp_path: Path) -> None:
    expect_error(tmp_path, "directory")


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    expect_error(p, "empty")


def test_truncated_gzip(tmp_path: Path, cpu_traces: dict[str, Any]) -> None:
    data = Path(cpu_traces["fn8"]).read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    expect_error(p, "truncated")


def test_truncated_json(tmp_path: Path, cpu_traces: dict[str, Any]) -> None:
    text = Path(cpu_traces["fn8_plain"]).read_text()
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) * 2 // 3])
    expect_error(p, "truncated")


def test_gzip_name_but_plain_content_still_parses(
    tmp_path: Path, cpu_traces: dict[str, Any]
) -> None:
    p = tmp_path / "plain.json.gz"
    p.write_bytes(Path(cpu_traces["fn8_plain"]).read_bytes())
    assert len(analyze_trace(p).steps) == 5


def test_not_json(tmp_path: Path) -> None:
    p = tmp_path / "notes.json"
    p.write_text("hello, this is not a trace")
    expect_error(p, "not valid JSON")


def test_binary(tmp_path: Path) -> None:
    p = tmp_path / "bin.json"
    p.write_bytes(bytes(range(256)) * 4)
    expect_error(p)


def test_json_without_trace_events(tmp_path: Path) -> None:
    p = tmp_path / "package.json"
    p.write_text(json.dumps({"name": "x", "version": "1"}))
    expect_error(p, "not a Kineto trace", "traceEvents")


def test_json_scalar(tmp_path: Path) -> None:
    p = tmp_path / "n.json"
    p.write_text("42")
    expect_error(p, "not a Kineto trace")


def test_empty_trace_events(tmp_path: Path) -> None:
    p = tmp_path / "empty_events.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"schemaVersion": 1, "traceEvents": []}).encode()))
    expect_error(p, "empty")


def test_only_metadata_events(tmp_path: Path) -> None:
    p = tmp_path / "meta.json"
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
    p.write_text(json.dumps({"traceEvents": events}))
    expect_error(p, "recorded nothing")


def test_chrome_trace_from_another_tool(tmp_path: Path) -> None:
    p = tmp_path / "other.json"
    events = [{"ph": "X", "cat": "blink", "name": "Layout", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]
    p.write_text(json.dumps({"traceEvents": events}))
    expect_error(p, "not a PyTorch profiler trace")


def _kineto_doc() -> dict[str, Any]:
    op = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 4}
    return {"traceEvents": [op, {**op, "ts": 20}]}


def test_multi_member_gzip_is_read_to_the_end(tmp_path: Path) -> None:
    # The fast path inflates only the first member; the trailer's size catches the rest.
    text = json.dumps(_kineto_doc()).encode()
    half = len(text) // 2
    path = tmp_path / "two.json.gz"
    path.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    report = analyze_trace(path)
    assert any(op.name == "aten::mm" and op.calls == 2 for op in report.top_ops)


def test_truncated_gzip_ending_in_a_huge_size_is_an_error_not_an_allocation(
    tmp_path: Path,
) -> None:
    packed = gzip.compress(json.dumps(_kineto_doc()).encode() * 50)
    path = tmp_path / "cut.json.gz"
    # Cut inside the deflate stream and end in bytes that read as a 4 GiB "size".
    path.write_bytes(packed[: len(packed) // 2] + b"\xff\xff\xff\xff")
    expect_error(path, "truncated or corrupt")
