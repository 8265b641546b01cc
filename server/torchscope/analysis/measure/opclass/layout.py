"""Copies and layout: ``copy_``, ``clone``, dtype and device casts (a read and a write of every
element), and the views (``view``, ``transpose``, ``permute`` …), which move
nothing: their time is dispatch. Views and concatenations (tensor lists are not recorded with
their shapes) have no model."""

from __future__ import annotations

from typing import Any

from .cost import LAYOUT, Work
from .passes import one_pass
from .tensors import base_name

COPIES = frozenset(["copy", "clone", "_to_copy", "_copy_from", "lift_fresh_copy"])
"""Ops that always copy. ``to`` and ``contiguous`` return their input when nothing needs to
change, and call ``_to_copy``/``clone`` when something does: they are views here."""

_VIEWS = """view reshape _reshape_alias _unsafe_view transpose t permute expand expand_as
as_strided unsqueeze squeeze flatten unflatten slice select narrow split split_with_sizes
_unsafe_split chunk unbind detach alias view_as numpy_T unfold movedim moveaxis swapaxes set
to contiguous lift_fresh resize"""
VIEWS = frozenset(_VIEWS.split())
"""Ops that move nothing (or return their input): their time is dispatch."""

_UNMODELLED = """_reshape_copy empty empty_like empty_strided cat stack concat hstack vstack repeat
tile roll flip constant_pad_nd pad zeros zeros_like ones ones_like full full_like new_zeros
new_empty new_ones new_full"""
UNMODELLED = frozenset(_UNMODELLED.split())
"""Factories and concatenations: they write memory, but tensor lists and sizes are recorded
without the shapes a model needs."""
NAMES = COPIES | VIEWS | UNMODELLED


def cost(name: str, args: Any) -> Work | None:
    return one_pass(name, args, LAYOUT) if base_name(name) in COPIES else None
