"""Normalisation (layer, batch, group, RMS norm and their backward ops): a pass that reads the
input (and, backward, the output's gradient) and writes the output, with the statistics kept in
cache. FLOPs: a handful per element (mean, variance, normalise, scale, shift), counted as
``FLOPS_PER_ELEMENT`` — ``FlopCounterMode`` counts none, and the intensity (under 2 FLOP/B) is
far below any ridge point either way. The composite callers (``layer_norm``, ``batch_norm``,
``rms_norm``) leave the work to the kernels they call."""

from __future__ import annotations

from typing import Any

from .cost import NORMALIZATION, Work, work
from .tensors import nbytes, numel, tensors

FLOPS_PER_ELEMENT = 5
KERNELS = frozenset(
    [
        "native_layer_norm",
        "native_batch_norm",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_no_training",
        "native_group_norm",
        "_fused_rms_norm",
        "native_layer_norm_backward",
        "native_batch_norm_backward",
        "native_group_norm_backward",
        "_fused_rms_norm_backward",
        "cudnn_batch_norm",
        "miopen_batch_norm",
    ]
)
CALLERS = frozenset(
    [
        "layer_norm",
        "batch_norm",
        "_batch_norm_impl_index",
        "group_norm",
        "rms_norm",
        "instance_norm",
        "_batch_norm_impl_index_backward",
        "cudnn_batch_norm_backward",
    ]
)
NAMES = KERNELS | CALLERS


def cost(name: str, args: Any) -> Work | None:
    ts = tensors(args)
    if not ts or not ts[0][0]:
        return None
    x = ts[0]
    backward = name.endswith("_backward")
    moved = sum(nbytes(t) for t in ts) + nbytes(x) * (2 if backward else 1)
    return work(
        FLOPS_PER_ELEMENT * numel(x[0]) * (2 if backward else 1), moved, x[1], NORMALIZATION
    )
