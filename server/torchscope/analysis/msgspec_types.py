"""msgspec's typed decoders of a trace, for the paths that need them: the msgspec loop
(``fastload.accept_all``, when the C scanner is not built or hands a document back),
``--steps`` (``window``) and any JSON value the C decoder leaves to msgspec.

Imported only then (``lazyjson.typed``): msgspec and what it imports are a tenth of
analysing a trace, and the C path reads most traces without it.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import msgspec
from msgspec import UNSET, DecodeError, Raw, UnsetType, ValidationError

__all__ = [
    "ANY",
    "EVENTS",
    "HEAD",
    "SHAPES",
    "TOP",
    "UNSET",
    "DecodeError",
    "Event",
    "Raw",
    "ValidationError",
]


class Shapes(msgspec.Struct, gc=False):
    """The ``args`` keys an op's work depends on (``work.op_work``), left undecoded."""

    dims: Raw = msgspec.field(name="Input Dims", default=Raw())
    types: Raw = msgspec.field(name="Input type", default=Raw())
    concrete: Raw = msgspec.field(name="Concrete Inputs", default=Raw())


class Event(msgspec.Struct, gc=False):
    """The fields of one trace event the analysis reads; ``UNSET`` where the key is absent."""

    ph: Union[str, UnsetType] = UNSET
    cat: Union[str, UnsetType] = UNSET
    name: Union[str, UnsetType] = UNSET
    pid: Union[int, str, None] = None
    tid: Union[int, str, None] = None
    ts: Union[int, float, UnsetType] = UNSET
    dur: Union[int, float, UnsetType] = UNSET
    args: Raw = Raw()


class Head(msgspec.Struct, gc=False):
    """What every event's ``args`` is read for while normalising (the rest stays raw)."""

    correlation: Any = None


ANY = msgspec.json.Decoder()
SHAPES = msgspec.json.Decoder(Shapes)
EVENTS = msgspec.json.Decoder(list[Event])
TOP = msgspec.json.Decoder(Union[dict[str, Raw], list[Raw]])
HEAD = msgspec.json.Decoder(Optional[Head])
