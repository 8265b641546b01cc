"""Types of the analysis's C part (``_native.c``), for mypy."""

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

class Args(Mapping[str, Any]):
    """An event's args object, decoded from the trace bytes when first read."""

    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def raw(self) -> bytes: ...
    def shapes(self) -> tuple[bytes, bytes, bytes] | None: ...

def scan(
    data: bytes | bytearray,
    lo: int,
    hi: int,
    sink: Any,
    consts: tuple[Any, ...],
    decode_any: Callable[[Any], Any],
    /,
) -> tuple[Any, int, int, bool, int, list[Any] | None] | None: ...
def scan_stream(
    read: Callable[[int], bytes],
    first: bytes | bytearray | memoryview,
    sink: Any,
    consts: tuple[Any, ...],
    decode_any: Callable[[Any], Any],
    low: int = ...,
    /,
) -> tuple[Any, int, int, bool, bytes, list[Any] | None] | None: ...
def nest(
    annotations: list[Any],
    python: list[Any],
    ops: list[Any],
    runtime: list[Any],
    runtime_subset: list[int] | None,
    out: tuple[list[Any], ...],
    tolerance: float,
    /,
) -> bool | None: ...
def merge(pairs: Iterable[tuple[Any, Any]], /) -> tuple[list[Any], list[Any]]: ...
def loads(data: Any, /) -> Any: ...
