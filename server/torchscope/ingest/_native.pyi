"""Types of the analysis's C part (``_native.c``), for mypy."""

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any

class Args(Mapping[str, Any]):
    """An event's args object, decoded from the trace bytes when first read."""

    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def raw(self) -> bytes: ...
    def shapes(self) -> tuple[bytes, bytes, bytes] | None: ...

class Span:
    """One complete event, its fields inline (``model.Span``'s fields, compact); made only by
    the scanner, pickled as ``model.Span``."""

    start: float
    end: float
    name: str
    track: int
    args: Mapping[str, Any]
    correlation: object
    def __getitem__(self, index: int) -> Any: ...
    def __len__(self) -> int: ...

class MemoryEvent:
    """One ``[memory]`` event, its fields inline (``model.MemoryEvent``'s fields, compact)."""

    ts: float
    track: int
    bytes: int
    addr: int
    device_type: int
    device_id: int
    def __init__(
        self, ts: float, track: int, bytes: int, addr: int, device_type: int, device_id: int
    ) -> None: ...
    def __getitem__(self, index: int) -> Any: ...
    def __len__(self) -> int: ...

def configure(consts: tuple[Any, ...], /) -> None: ...
def scan_stream(
    read: Callable[[int], bytes],
    first: bytes | bytearray | memoryview,
    sink: Any,
    file: IO[bytes],
    low: int = ...,
    window: Any = ...,
    /,
) -> tuple[Any, int, int, bool, bytes, list[Any] | None] | None: ...
def nest(
    annotations: list[Any],
    python: list[Any],
    ops: list[Any],
    runtime: list[Any],
    wanted: bytes | bytearray | None,
    out: tuple[Any, ...],
    tolerance: float,
    /,
) -> bool | None: ...
def merge(pairs: Iterable[tuple[Any, Any]], /) -> tuple[list[Any], list[Any]]: ...
def loads(data: Any, /) -> Any: ...
