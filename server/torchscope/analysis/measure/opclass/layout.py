"""Copies and layout: ``copy_``, ``clone``, ``contiguous``, dtype and device casts (a read and a
write of every element), and the views (``view``, ``transpose``, ``permute`` …), which move
nothing: their time is dispatch. Views and concatenations (tensor lists are not recorded with
their shapes) have no model."""

from __future__ import annotations

from typing import Any

from .cost import LAYOUT, Work
from .passes import one_pass
from .tensors import base_name

COPIES = frozenset(
    ["copy", "clone", "contiguous", "_to_copy", "to", "_copy_from", "lift_fresh_copy"]
)
VIEWS = frozenset(
    [
        "view",
        "reshape",
        "_reshape_alias",
        "_unsafe_view",
        "transpose",
        "t",
        "permute",
        "expand",
        "expand_as",
        "as_strided",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "detach",
        "alias",
        "view_as",
        "numpy_T",
        "_reshape_copy",
        "empty",
        "empty_like",
        "empty_strided",
        "resize",
        "cat",
        "stack",
        "concat",
        "hstack",
        "vstack",
        "repeat",
        "tile",
        "roll",
        "flip",
        "constant_pad_nd",
        "pad",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "new_zeros",
        "new_empty",
        "new_ones",
        "new_full",
        "contiguous_format",
        "lift_fresh",
        "unfold",
        "movedim",
        "moveaxis",
        "swapaxes",
        "set_",
        "_unsafe_split",
    ]
)
NAMES = COPIES | VIEWS


def cost(name: str, args: Any) -> Work | None:
    return one_pass(name, args, LAYOUT) if base_name(name) in COPIES else None
