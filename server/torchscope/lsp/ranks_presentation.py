"""How a multi-process profile reads in the editor: the verdict names the slowest rank (the
``def`` hover's per-rank table is ``torchscope.report.ranks.ranks_markdown``)."""

from __future__ import annotations

from torchscope.lsp.results import Profile


def headline(profile: Profile) -> str:
    """The verdict headline; for several ranks, the slowest rank's, naming it."""
    verdict = profile.report.verdict.headline
    return profile.ranks.titled(verdict) if profile.ranks is not None else verdict
