"""JSON values decoded on demand: by the C decoder where it is sure to read a value as
stdlib ``json`` does (``_native.loads``), else by stdlib ``json`` (:func:`decode_json`); and
the memo key of an op's shapes (:func:`shapes_key`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import accel


def decode_json(data: Any) -> Any:
    """The JSON value in ``data``: the C decoder's where it takes it, else stdlib's."""
    native = accel.native
    if native is not None:
        try:
            return native.loads(data)
        except ValueError:
            pass
    return accel.json_loads(data)


def shapes_key(args: Mapping[str, Any]) -> tuple[bytes, bytes, bytes] | None:
    """The raw bytes of ``args``' shapes, types and concrete inputs (equal bytes: equal
    values), for memoising per-op work across calls; ``None`` when they cannot be told from
    the raw bytes (an args the C scanner did not read, or one with an escaped key)."""
    native = accel.native
    if native is None or args.__class__ is not native.Args:
        return None
    found: tuple[bytes, bytes, bytes] | None = args.shapes()  # type: ignore[attr-defined]
    return found
