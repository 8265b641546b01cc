"""Reductions and pooling: read their inputs once and write a much smaller output
(``passes.one_pass``)."""

from __future__ import annotations

from typing import Any

from .cost import REDUCTION, Work
from .passes import one_pass

NAMES = frozenset(
    [
        "sum",
        "mean",
        "amax",
        "amin",
        "max",
        "min",
        "prod",
        "norm",
        "linalg_vector_norm",
        "var",
        "std",
        "var_mean",
        "std_mean",
        "argmax",
        "argmin",
        "any",
        "all",
        "logsumexp",
        "cumsum",
        "cumprod",
        "max_pool1d",
        "max_pool2d",
        "max_pool3d",
        "max_pool2d_with_indices",
        "max_pool3d_with_indices",
        "avg_pool1d",
        "avg_pool2d",
        "avg_pool3d",
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "adaptive_avg_pool3d",
        "_adaptive_avg_pool2d",
        "_adaptive_avg_pool3d",
        "adaptive_max_pool2d",
        "mkldnn_max_pool2d",
    ]
)
"""Pooling is here too: it reads its input once and writes a smaller output."""


def cost(name: str, args: Any) -> Work | None:
    return one_pass(name, args, REDUCTION, reduction=True)
