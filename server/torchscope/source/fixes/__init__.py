"""Measured fixes: one module per fix, each ending with ``FIX = YourFix()`` (``base.Fix``).

``FIXES`` lists them in the order of the output contract's ids; a module not in ``ORDER``
follows by id, so adding a fix never edits this file. Pure source work (``ast``): nothing
here imports torch, the host or a face.
"""

from __future__ import annotations

import importlib
import os

from .base import DEVICES, Fix, Rewrite, Site

#: The contract's fix ids, in the order ``torchscope fix --list`` offers them.
ORDER = (
    "sdpa",
    "sync-in-loop",
    "foreach",
    "zero-grad-none",
    "fused-optimizer",
    "pinned-transfer",
    "inference-mode",
    "channels-last",
    "out-variant",
)


#: Modules of this package that are not fixes.
NOT_FIXES = frozenset({"base", "offers", "trial"})


def _discover() -> list[Fix]:
    found: list[Fix] = []
    for name in sorted(os.listdir(os.path.dirname(__file__))):
        if not name.endswith(".py") or name.startswith("_") or name[:-3] in NOT_FIXES:
            continue
        module = importlib.import_module(f"{__name__}.{name[:-3]}")
        fix = getattr(module, "FIX", None)
        if isinstance(fix, Fix):
            found.append(fix)
    rank = {fid: i for i, fid in enumerate(ORDER)}
    return sorted(found, key=lambda f: (rank.get(f.id, len(ORDER)), f.id))


FIXES: tuple[Fix, ...] = tuple(_discover())


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
