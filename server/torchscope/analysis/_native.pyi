"""Types of the analysis's C part (``_native.c``), for mypy."""

from collections.abc import Callable
from typing import Any

class Slice:
    """A read-only view of an event's raw args bytes inside the trace (buffer protocol)."""

    def __len__(self) -> int: ...
    def copy(self) -> bytes: ...

def scan(
    data: bytes | bytearray,
    lo: int,
    hi: int,
    sink: Any,
    consts: tuple[Any, ...],
    decode_any: Callable[[Any], Any],
    /,
) -> tuple[Any, int, int, bool, int, list[Any] | None] | None: ...
def stopped_at() -> int: ...
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
