"""Indexing and embeddings: gathers of rows (``embedding``, ``embedding_bag``, ``index_select``,
``gather``). Bytes: the rows read, the output written and the indices read; FLOPs: none (an
embedding bag's sums, one per element read). Scatters and boolean masks have no model."""

from __future__ import annotations

from typing import Any

from .cost import INDEXING, Work, work
from .tensors import concrete, nbytes, numel, tensors

NAMES = frozenset(
    [
        "embedding",
        "embedding_bag",
        "_embedding_bag",
        "_embedding_bag_forward_only",
        "index_select",
        "gather",
        "index",
        "index_put",
        "index_add",
        "scatter",
        "scatter_add",
        "scatter_reduce",
        "take",
        "masked_select",
        "nonzero",
        "embedding_dense_backward",
        "embedding_backward",
        "_embedding_bag_backward",
        "_embedding_bag_dense_backward",
        "index_fill",
        "masked_scatter",
    ]
)


def _rows(weight: list[int], indices: int, size: int) -> int:
    return indices * numel(weight[1:]) * size


def cost(name: str, args: Any) -> Work | None:
    ts = tensors(args)
    base = name.removeprefix("aten::").rstrip("_")
    if base == "embedding" and len(ts) >= 2 and len(ts[0][0]) == 2:
        (w, dtype, size), idx = ts[0], ts[1]
        out = _rows(w, numel(idx[0]), size)
        return work(0.0, 2 * out + nbytes(idx), dtype, INDEXING)
    if base in ("embedding_bag", "_embedding_bag", "_embedding_bag_forward_only") and len(ts) >= 3:
        (w, dtype, size), idx, offsets = ts[0], ts[1], ts[2]
        if len(w) != 2:
            return None
        read = _rows(w, numel(idx[0]), size)
        out = numel(offsets[0]) * w[1] * size
        return work(
            numel(idx[0]) * w[1], read + out + nbytes(idx) + nbytes(offsets), dtype, INDEXING
        )
    if base == "gather" and len(ts) >= 2:
        (_, dtype, size), idx = ts[0], ts[1]
        return work(0.0, 2 * numel(idx[0]) * size + nbytes(idx), dtype, INDEXING)
    if base == "index_select" and len(ts) >= 2:
        (x, dtype, size), idx = ts[0], ts[1]
        c = concrete(args)
        dim = int(c[1]) if len(c) > 1 and str(c[1]).lstrip("-").isdigit() else None
        if dim is None or not x or x[dim] == 0:
            return None
        out = numel(x) // x[dim] * numel(idx[0])
        return work(0.0, 2 * out * size + nbytes(idx), dtype, INDEXING)
    return None
