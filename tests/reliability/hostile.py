"""Hostile trace files, one per way bytes can be wrong, and what each must give: the
analysis (``needle`` None) or one message holding ``needle``. Shared by the CLI, LSP and MCP
tests (``test_hostile_traces.py``)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest


def event(name: str = "aten::mm", ts: str = "10", dur: str = "5") -> bytes:
    return (
        b'{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":1,"ts":%s,"dur":%s}'
        % (name.encode(), ts.encode(), dur.encode())
    )


def document(*events: bytes) -> bytes:
    return b'{"traceEvents":[' + b",".join(events) + b"]}"


GOOD = document(event("aten::mm"), event("aten::add", "20", "3"))

BOMB_MB = 500
"""The gzip bomb's inflated size: 500 MB of blanks inside a valid trace, ~0.5 MB gzipped."""


def gzip_bomb(path: Path, inflated_mb: int = BOMB_MB) -> Path:
    """A valid trace padded with ``inflated_mb`` MB of blanks between two events, gzipped
    (as members of a multi-member file: the one blank megabyte is compressed once)."""
    blank = gzip.compress(b" " * (1 << 20), 9)
    with open(path, "wb") as out:
        out.write(gzip.compress(b'{"traceEvents":[' + event() + b","))
        for _ in range(inflated_mb):
            out.write(blank)
        out.write(gzip.compress(event("aten::add") + b"]}"))
    return path


def _names(report: dict[str, Any]) -> list[str]:
    return sorted(op["name"] for op in report["top_ops"])


@dataclass(frozen=True)
class Hostile:
    name: str
    make: Callable[[Path], Path]
    """Writes the case under a folder of its own; returns the path to analyse."""
    needle: Optional[str]
    """In the message; None: the trace analyses."""
    check: Optional[Callable[[dict[str, Any]], None]] = None
    """On the ``--json`` report, for a trace that analyses."""
    cli_needle: Optional[str] = None
    """The CLI's needle where it differs (``analyze DIR`` reads a folder of ranks)."""


def _write(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / name
        path.write_bytes(data)
        return path

    return make


def _names_are(*names: str) -> Callable[[dict[str, Any]], None]:
    """A check: the report's top ops are exactly ``names`` (sorted)."""

    def check(report: dict[str, Any]) -> None:
        assert _names(report) == sorted(names), json.dumps(report["top_ops"])

    return check


def _fifo(folder: Path) -> Path:
    path = folder / "pipe.json"
    os.mkfifo(path)
    return path


def _directory(folder: Path) -> Path:
    path = folder / "traces.json"
    path.mkdir()
    return path


def _not_a_folder(folder: Path) -> Path:
    (folder / "trace.json").write_bytes(GOOD)
    return folder / "trace.json" / "x.json"


def _loop(folder: Path) -> Path:
    path = folder / "loop.json"
    path.symlink_to(path.name)
    return path


def _unreadable(folder: Path) -> Path:
    """A file without read permission: refused by ``open`` for a normal user, and for root
    run without CAP_DAC_OVERRIDE (``as_reader`` in the tests); plain root reads anything."""
    path = folder / "secret.json"
    path.write_bytes(GOOD)
    path.chmod(0)
    return path


_TRACE = gzip.compress(GOOD + b" " * 4000)

CASES = [
    Hostile(
        "lone-surrogate",
        _write("surrogate.json", document(event("a\\ud800b"))),
        None,
        _names_are("a\ufffdb"),  # the lone surrogate replaced by U+FFFD
    ),
    Hostile(
        "invalid-utf8",
        _write("latin1.json", document(event("cafX")).replace(b"cafX", b"caf\xe9")),
        "not a text file (not UTF-8 JSON)",
    ),
    Hostile(
        "deep-nesting",
        _write(
            "deep.json",
            document(event()[:-1] + b',"args":{"a":' + b"[" * 200_000 + b"]" * 200_000 + b"}}"),
        ),
        "nested too deeply",
    ),
    Hostile(
        "nan-infinity",
        _write(
            "nan.json",
            document(event("x", "NaN"), event("y", "1", "Infinity"), event("z", "1", "-Infinity"),
                     event("ok")),
        ),
        None,
        _names_are("ok"),
    ),
    Hostile(
        "infinity-only",
        _write("inf.json", document(event("x", "Infinity"))),
        "nothing to analyse: event 0 has a non-finite timestamp (ts: Infinity)",
    ),
    Hostile(
        "nan-duration-only",
        _write(
            "nandur.json",
            document(b'{"ph":"M","name":"process_name","pid":1,"args":{}}', event("y", "1", "NaN")),
        ),
        "nothing to analyse: event 1 has a non-finite duration (dur: NaN)",
    ),
    Hostile(
        "float-out-of-range",
        _write("huge.json", document(event("x", "1e999"), event("y", "1", "-1e999"), event("ok"))),
        None,
        _names_are("ok"),
    ),
    Hostile(
        "integer-out-of-range",
        _write("digits.json", document(event("x", "1" + "0" * 5000), event("ok"))),
        "a number too long to read",
    ),
    Hostile(
        "duplicate-keys",
        _write(
            "dup.json",
            document(event("first")[:-1] + b',"name":"last"}'),
        ),
        None,
        _names_are("last"),
    ),
    Hostile(
        "bom",
        _write("bom.json", b"\xef\xbb\xbf" + GOOD),
        None,
        _names_are("aten::add", "aten::mm"),
    ),
    Hostile("trailing-garbage", _write("tail.json", GOOD + b" garbage"), "Extra data"),
    Hostile("empty-file", _write("empty.json", b""), "the file is empty (0 bytes)"),
    Hostile("directory", _directory, "is a directory", cli_needle="traces.json"),
    Hostile("fifo", _fifo, "is a FIFO (named pipe), not a regular file"),
    Hostile("path-through-a-file", _not_a_folder, "is a file, not a folder"),
    Hostile("permission-denied", _unreadable, "permission denied"),
    Hostile("symlink-loop", _loop, "symbolic link loop"),
    Hostile(
        "truncated-gzip",
        _write("cut.json.gz", _TRACE[: len(_TRACE) // 2]),
        "the gzip data is truncated or corrupt",
    ),
    Hostile(
        "multi-member-gzip",
        _write("members.json.gz", gzip.compress(GOOD[:20]) + gzip.compress(GOOD[20:])),
        None,
        _names_are("aten::add", "aten::mm"),
    ),
    Hostile(
        "gzip-trailing-garbage",
        _write("tailgz.json.gz", gzip.compress(GOOD) + b"garbage!"),
        "trailing garbage after the gzip data",
    ),
    Hostile("gzip-bomb", lambda folder: gzip_bomb(folder / "bomb.json.gz"), "a gzip bomb"),
]


def as_reader() -> list[str]:
    """The command prefix that makes a process read files as a normal user does: for root,
    ``setpriv`` without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH (root otherwise reads even a
    file with mode 000); nothing for anyone else. None of it where root has no setpriv."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


def permission_testable() -> bool:
    return os.geteuid() != 0 or bool(as_reader())


IDS = [case.name for case in CASES]


def skip_unless_testable(case: Hostile) -> None:
    if case.name == "permission-denied" and not permission_testable():
        pytest.skip("root without setpriv reads even a mode-000 file: nothing to refuse")


def made(case: Hostile, tmp_path: Path) -> Path:
    """The case written under a folder of its own in ``tmp_path``."""
    folder = tmp_path / case.name
    folder.mkdir()
    return case.make(folder)


# --- fuzzing: a good trace with hostile bytes spliced in -----------------------------------

FRAGMENTS = [
    b"\\ud800", b"\\udc00x", b"\\u0000", b"NaN", b"Infinity", b"-Infinity", b"1e999",
    b"1" * 30, b"\xff", b"\xc3", b"\xef\xbb\xbf", b"[" * 70, b"{" * 70, b'"', b"\\", b"}",
    b"]", b",", b"\x00", b'"name":', b'"ts":', b'"args":{"a":[[[[1]]]]}',
]


def fuzz_strategy() -> Any:
    """``(document bytes, gzipped)``: :data:`GOOD` with up to four splices, each at a
    position, deleting up to 3 bytes and inserting a fragment or a few random bytes."""
    from hypothesis import strategies as st

    splice = st.tuples(
        st.integers(0, len(GOOD)),
        st.integers(0, 3),
        st.sampled_from(FRAGMENTS) | st.binary(max_size=4),
    )
    return st.tuples(st.lists(splice, max_size=4).map(_spliced), st.booleans())


def _spliced(splices: list[tuple[int, int, bytes]]) -> bytes:
    data = GOOD
    for at, cut, fragment in splices:
        at = min(at, len(data))
        data = data[:at] + fragment + data[at + cut :]
    return data


def write_fuzzed(folder: Path, data: bytes, zipped: bool) -> Path:
    path = folder / ("fuzz.json.gz" if zipped else "fuzz.json")
    path.write_bytes(gzip.compress(data) if zipped else data)
    return path
