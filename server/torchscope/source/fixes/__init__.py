"""Measured fixes: one module per fix, each ending with ``FIX = YourFix()`` (``base.Fix``).

``FIXES`` lists them, in the order of the output contract's ids. Pure source work (``ast``):
nothing here imports torch, the host or a face.
"""

from __future__ import annotations

from . import (
    channels_last,
    foreach,
    fused_optimizer,
    inference_mode,
    out_variant,
    pinned_transfer,
    sdpa,
    sync_in_loop,
    zero_grad_none,
)
from .base import DEVICES, Fix, Rewrite, Site

#: Every fix, in the order ``torchscope fix --list`` offers them (the contract's ids). A new fix
#: is its module (ending with ``FIX = YourFix()``), its line here, its docs and its test.
FIXES: tuple[Fix, ...] = (
    sdpa.FIX,
    sync_in_loop.FIX,
    foreach.FIX,
    zero_grad_none.FIX,
    fused_optimizer.FIX,
    pinned_transfer.FIX,
    inference_mode.FIX,
    channels_last.FIX,
    out_variant.FIX,
)

#: The contract's fix ids, in that order.
ORDER = tuple(fix.id for fix in FIXES)


def fix_by_id(fix_id: str) -> Fix | None:
    return next((f for f in FIXES if f.id == fix_id), None)


def offered(source: str, function: str, device: str) -> list[tuple[Fix, Site]]:
    """Every fix that applies to ``function`` on ``device``, with each place it rewrites."""
    return [(fix, site) for fix in FIXES for site in fix.sites(source, function, device)]


def offered_anywhere(
    source: str, function: str, devices: tuple[str, ...] | None = None
) -> list[tuple[Fix, Site, list[str]]]:
    """Every fix that applies to ``function`` on any of ``devices`` (all when None), each
    place once, with the devices it applies on (``fix --list``: which device the code runs
    on is not known until a trial runs)."""
    found: dict[tuple[str, int], tuple[Fix, Site, list[str]]] = {}
    for device in devices or DEVICES:
        for fix, site in offered(source, function, device):
            found.setdefault((fix.id, site.line), (fix, site, []))[2].append(device)
    rank = {f.id: i for i, f in enumerate(FIXES)}
    return sorted(found.values(), key=lambda o: (rank[o[0].id], o[1].line))


__all__ = ["FIXES", "ORDER", "Fix", "Rewrite", "Site", "fix_by_id", "offered", "offered_anywhere"]
