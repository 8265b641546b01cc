"""The recorded arguments of one op call, read for the cost model: tensors (dims, dtype,
itemsize), ``Concrete Inputs`` (scalars and int lists as Kineto writes them) and the base name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

DTYPES: dict[str, tuple[str, int]] = {
    "float": ("float32", 4),
    "double": ("float64", 8),
    "c10::Half": ("float16", 2),
    "c10::BFloat16": ("bfloat16", 2),
    "c10::Float8_e4m3fn": ("float8_e4m3fn", 1),
    "c10::Float8_e5m2": ("float8_e5m2", 1),
    "long int": ("int64", 8),
    "int": ("int32", 4),
    "short int": ("int16", 2),
    "signed char": ("int8", 1),
    "unsigned char": ("uint8", 1),
    "bool": ("bool", 1),
    "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16),
}
"""``Input type`` strings as Kineto writes them → (torch dtype name, bytes per element)."""

Tensor = tuple[list[int], str, int]
"""(dims, dtype, itemsize) of one tensor argument."""


def base_name(name: str) -> str:
    """``aten::mul_`` → ``mul``."""
    short = name[6:] if name.startswith("aten::") else name
    return short.rstrip("_") if short not in ("_softmax", "_log_softmax") else short


def tensor(d: Any, t: Any) -> Tensor | None:
    """One argument as a tensor (None: a scalar, a list, or an unknown dtype)."""
    known = DTYPES.get(t) if isinstance(t, str) else None
    if known is None or not isinstance(d, list):
        return None
    if not all(isinstance(x, int) and x >= 0 for x in d):
        return None
    return (d, known[0], known[1])


def arguments(args: Any) -> list[Tensor | None]:
    """Every argument in order: a tensor, or None for anything else."""
    dims = args.get("Input Dims") if isinstance(args, Mapping) else None
    types = args.get("Input type") if isinstance(args, Mapping) else None
    if not isinstance(dims, list) or not isinstance(types, list):
        return []
    return [tensor(d, t) for d, t in zip(dims, types)]


def tensors(args: Any) -> list[Tensor]:
    """Each tensor argument, in order; scalars and lists are left out."""
    return [x for x in arguments(args) if x is not None]


def concrete(args: Any) -> list[Any]:
    """The ``Concrete Inputs`` (strings: ``"[2, 2]"``, ``"True"``, ``"0.1"``; "" for tensors)."""
    found = args.get("Concrete Inputs") if isinstance(args, Mapping) else None
    return found if isinstance(found, list) else []


def int_list(text: Any) -> list[int] | None:
    """``"[2, 2]"`` → ``[2, 2]`` (None: not an int list)."""
    if not isinstance(text, str) or not text.startswith("["):
        return None
    try:
        return [int(x) for x in text.strip("[]").split(",") if x.strip()]
    except ValueError:
        return None


def flag(text: Any) -> bool | None:
    """``"True"``/``"1"`` → True, ``"False"``/``"0"`` → False (None: not recorded)."""
    if text in ("True", "1", "true"):
        return True
    if text in ("False", "0", "false"):
        return False
    return None


def number(text: Any) -> float | None:
    """``"0.1"`` → 0.1 (None: not a number)."""
    try:
        return float(text) if isinstance(text, str) and text else None
    except ValueError:
        return None


def numel(dims: list[int]) -> int:
    return math.prod(dims) if dims else 1


def nbytes(t: Tensor) -> int:
    return numel(t[0]) * t[2]


def broadcast(shapes: list[list[int]]) -> list[int] | None:
    """The broadcast shape of ``shapes`` (None: they do not broadcast)."""
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    return None
                out[i] = d
    return out
