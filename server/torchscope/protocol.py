"""The messages the daemon and the worker exchange, and how they travel.

This is the only module both sides import: the daemon (which never imports torch) and the
worker (which never imports pygls). It depends on the standard library and msgpack only, and
stays importable on the oldest Python a user's torch may run on (3.9).

Framing: each message is one msgpack map prefixed by its length as a 4-byte big-endian
unsigned integer. A map carries its kind under ``"type"``; ``decode`` turns it back into the
dataclass of that kind.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

import msgpack

PROTOCOL_VERSION = 1

#: Frames larger than this are refused: a corrupt length prefix (e.g. a stray ``print`` that
#: slipped into the pipe) must fail loudly instead of making the reader wait for gigabytes.
MAX_FRAME_BYTES = 64 * 1024 * 1024

_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The byte stream is not a valid sequence of torchscope frames."""


@dataclass
class Message:
    """Base of all messages; ``TYPE`` is the tag written into the frame."""

    TYPE: ClassVar[str] = ""


@dataclass
class Hello(Message):
    """First frame from a fresh worker: what the target interpreter can do."""

    TYPE: ClassVar[str] = "hello"
    protocol_version: int
    python_version: str
    python_executable: str
    torch_version: Optional[str]
    cuda_available: bool
    device_names: list[str] = field(default_factory=list)
    pid: int = 0
    error: Optional[str] = None  # e.g. torch missing or too old


@dataclass
class ProfileRequest(Message):
    """Ask the worker to profile one function; see DESIGN.md §2 for the passes."""

    TYPE: ClassVar[str] = "profile"
    job_id: int
    file: str
    qualname: str
    call: Optional[str]
    trace_path: str
    workspace_root: Optional[str] = None
    steps: int = 5
    warmup: int = 3
    timing_calls: int = 20
    timing_budget_s: float = 2.0
    device: str = "auto"  # "auto" | "cpu" | "cuda"
    with_stack: bool = False  # Python frames in the trace: callee totals, at a profiling cost
    memory: bool = False  # the profile pass records allocations ([memory] events) per line


@dataclass
class Progress(Message):
    """One pass of a job has started."""

    TYPE: ClassVar[str] = "progress"
    job_id: int
    stage: str
    message: str
    fraction: float = 0.0


@dataclass
class Output(Message):
    """Text the user's code wrote to stdout/stderr while a job ran."""

    TYPE: ClassVar[str] = "output"
    job_id: int
    stream: str
    text: str


@dataclass
class ProfileResult(Message):
    """What the worker measured: unprofiled timing and the path of the exported trace."""

    TYPE: ClassVar[str] = "result"
    job_id: int
    trace_path: str
    cold_us: float
    call_us: list[float]
    dispatch_floor_us: float
    device_kind: str
    device_name: str
    steps: int
    def_line: int = 0
    torch_version: str = ""
    attribution_note: str = ""  # why lines are not attributed ("" when they are)
    timed_calls: int = 0  # calls behind ``call_us`` (fast functions are timed in batches)
    page_faults: list[float] = field(default_factory=list)  # minor faults per call, per sample
    page_fault_us: float = 0.0  # calibrated cost of one minor fault (0: not measured)
    cuda_memory: dict[str, Any] = field(default_factory=dict)  # CUDA cross-check (memory pass)


@dataclass
class JobError(Message):
    """A job failed in a way the user can fix; ``kind`` says which step failed."""

    TYPE: ClassVar[str] = "error"
    job_id: int
    kind: str  # "import" | "target" | "call-missing" | "call-invalid" | "call-raised" | "internal"
    message: str
    line: Optional[int] = None
    traceback: str = ""


COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")
"""The ``torch.compile`` modes the CLI and the editor offer (the worker also accepts
``max-autotune``)."""


@dataclass
class CompareRequest(ProfileRequest):
    """Profile the function eagerly and under ``torch.compile(mode=mode)`` in one job.

    The eager side runs every pass of a ``ProfileRequest`` (its trace goes to ``trace_path``);
    the compiled side is warmed up (its first call, the compile, is timed on its own), timed in
    rounds interleaved with the eager calls, and profiled into ``compiled_trace_path``.
    """

    TYPE: ClassVar[str] = "compare"
    mode: str = "default"
    compiled_trace_path: str = ""


@dataclass
class CompareResult(Message):
    """Both sides of a compile comparison; ``eager``/``compiled`` are ``ProfileResult`` fields.

    ``compiled`` is None when compiling or running the compiled function failed:
    ``compile_error`` then holds the compiler's own message and the eager side still stands.
    """

    TYPE: ClassVar[str] = "compare_result"
    job_id: int
    eager: dict[str, Any]
    compiled: Optional[dict[str, Any]] = None
    mode: str = "default"
    compile_s: Optional[float] = None
    compile_error: str = ""
    compile_error_kind: str = ""  # "compile-failed" | "compiled-call-raised"
    compile_traceback: str = ""
    recompiles: int = 0
    """Compilations Dynamo started during the timed and profiled calls (should be 0)."""
    graph_breaks: list[str] = field(default_factory=list)
    """Dynamo's own reasons for each graph break (with counts), as it words them."""
    graph_code: dict[str, str] = field(default_factory=dict)
    """FX graph cache key (the hash in ``## Call CompiledFxGraph <key> ##``) → generated code."""
    paired_ratios: list[float] = field(default_factory=list)
    """compiled / eager per interleaved timing round (each pair measured back to back)."""


@dataclass
class Shutdown(Message):
    """Ask the worker to exit cleanly."""

    TYPE: ClassVar[str] = "shutdown"


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        Hello,
        ProfileRequest,
        Progress,
        Output,
        ProfileResult,
        JobError,
        CompareRequest,
        CompareResult,
        Shutdown,
    )
}


def encode(message: Message) -> bytes:
    """Serialise a message into one length-prefixed frame."""
    payload: dict[str, Any] = dataclasses.asdict(message)
    payload["type"] = message.TYPE
    body = msgpack.packb(payload, use_bin_type=True)
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    return _HEADER.pack(len(body)) + body


def decode(body: bytes) -> Message:
    """Turn one frame body (without its length prefix) back into its dataclass."""
    try:
        payload = msgpack.unpackb(body, raw=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise ProtocolError(f"frame is not valid msgpack: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise ProtocolError("frame is not a message map with a 'type'")
    cls = MESSAGE_TYPES.get(payload.pop("type"))
    if cls is None:
        raise ProtocolError("frame has an unknown message type")
    names = {f.name for f in dataclasses.fields(cls)}
    try:
        return cls(**{k: v for k, v in payload.items() if k in names})
    except TypeError as exc:
        raise ProtocolError(f"{cls.__name__} frame is missing fields: {exc}") from exc


class FrameDecoder:
    """Incremental decoder: feed it chunks as they arrive, get whole messages out.

    Handles frames split across reads and several frames in one read.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_frame_bytes

    def feed(self, chunk: bytes) -> list[Message]:
        self._buffer.extend(chunk)
        messages: list[Message] = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > self._max:
                raise ProtocolError(
                    f"frame of {length} bytes exceeds the {self._max}-byte limit "
                    "(is something else writing to the protocol pipe?)"
                )
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            messages.append(decode(body))
        return messages

    @property
    def pending(self) -> int:
        """Bytes received that do not form a whole frame yet."""
        return len(self._buffer)
