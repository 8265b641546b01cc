"""JSON decoded on demand: msgspec imported on first need (:func:`typed`), the C decoder
tried first (:func:`decode_json`), and an event's ``args`` left as bytes until a rule reads
it (:class:`LazyArgs`, and its C twin ``_native.Args``; :func:`shapes_key` reads either)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from . import accel


def typed() -> ModuleType:
    """``msgspec_types``, imported on first need (ImportError without msgspec)."""
    from . import msgspec_types

    return msgspec_types


def decode_errors() -> tuple[type[Exception], ...]:
    """msgspec's decode errors (imports it: raise them only where it was used)."""
    t = typed()
    return (t.DecodeError, t.ValidationError)


def msgspec_decode(data: Any) -> Any:
    """The JSON value in ``data``, by msgspec (which also words any error)."""
    return typed().ANY.decode(data)


def decode_json(data: Any) -> Any:
    """The JSON value in ``data``: the C decoder's where it is sure to read it as msgspec
    does (``_native.loads``), else :func:`msgspec_decode`'s."""
    native = accel.native
    if native is not None:
        try:
            return native.loads(data)
        except ValueError:
            pass
    return msgspec_decode(data)


class LazyArgs(tuple, Mapping[str, Any]):  # type: ignore[type-arg]
    """An event's ``args`` object, decoded on first read (most events' never are); the C
    scanner's spans hold its native twin, ``_native.Args`` (``_native_args.c``).

    A one-item tuple of the ``Raw`` bytes, so that making one per event is a C call
    (``tuple.__new__(LazyArgs, (raw,))``, no Python ``__init__``: 120k of them for a 54 MB
    trace); the decoded dict is kept in the instance dict, made only for the few read."""

    def _decoded(self) -> dict[str, Any]:
        try:
            return self.__dict__["d"]  # type: ignore[no-any-return]
        except KeyError:
            d = self.__dict__["d"] = msgspec_decode(tuple.__getitem__(self, 0))
            return d  # type: ignore[no-any-return]

    def __getitem__(self, key: str) -> Any:  # type: ignore[override]
        return self._decoded()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._decoded().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._decoded()

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyArgs):
            other = other._decoded()
        elif isinstance(other, Mapping) and not isinstance(other, dict):
            other = dict(other.items())
        return self._decoded() == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyArgs({self._decoded()!r})"


def shapes_key(args: Mapping[str, Any]) -> tuple[bytes, bytes, bytes] | None:
    """The raw bytes of ``args``' shapes, types and concrete inputs (equal bytes: equal
    values), for memoising per-op work across calls; ``None`` unless ``args`` is lazy."""
    cls = args.__class__
    if cls is LazyArgs:
        raw: Any = tuple.__getitem__(args, 0)  # type: ignore[call-overload]
    elif accel.native is not None and cls is accel.native.Args:
        found: tuple[bytes, bytes, bytes] | None = args.shapes()  # type: ignore[attr-defined]
        if found is not None:
            return found
        raw = args.raw()  # type: ignore[attr-defined]  # an escaped key: msgspec reads it
    else:
        return None
    try:
        s = typed().SHAPES.decode(raw)
    except decode_errors():
        return None
    return bytes(s.dims), bytes(s.types), bytes(s.concrete)
