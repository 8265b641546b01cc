"""Words and numbers for the editor: inlay labels, hover markdown, lens titles.

Reads the typed :class:`~torchscope.lsp.results.Profile`; the words are ``torchscope.report``'s
(the same rows ``torchscope profile`` prints), and this module adds what only the editor has:
which lines are hot enough, and the client's command links.
"""

from __future__ import annotations

from typing import Optional

from torchscope.analysis import LineStats

# The client command ids live in lsp/constants.py; re-exported for the presentation modules.
from torchscope.lsp.constants import CLIENT_COMPARE_COMPILE as CLIENT_COMPARE_COMPILE
from torchscope.lsp.constants import CLIENT_OPEN_GENERATED_CODE as CLIENT_OPEN_GENERATED_CODE
from torchscope.lsp.constants import CLIENT_OPEN_TRACE as CLIENT_OPEN_TRACE
from torchscope.lsp.constants import CLIENT_PROFILE as CLIENT_PROFILE
from torchscope.lsp.constants import CLIENT_PROFILE_SIZES as CLIENT_PROFILE_SIZES
from torchscope.lsp.ranks_presentation import headline
from torchscope.lsp.results import Profile

# The words live in torchscope.report (one text for every face); re-exported for the editor.
from torchscope.report.hovers import def_markdown
from torchscope.report.lines import callee_label as callee_label
from torchscope.report.lines import line_label as line_label
from torchscope.report.lines import line_markdown
from torchscope.report.markdown import command_link
from torchscope.report.ranks import ranks_markdown


def hot_lines(profile: Profile, threshold: float) -> list[LineStats]:
    return [line for line in profile.report.lines if line.share >= threshold]


def line_hover(profile: Profile, line: LineStats, qualname: str, stale: bool) -> str:
    """The ops, kernels, copies and syncs of one line, per call of the function; after a
    ``torch.compile`` comparison, the line's eager time against its compiled kernels'."""
    text = line_markdown(line, qualname, profile.gpu, profile.report.peaks, stale)
    lines = profile.comparison.lines if profile.comparison is not None else None
    if lines is not None:
        from torchscope.report.compare import line_versus

        compiled = [c for c in lines.lines if c.line == line.line]
        if compiled:
            text += f"\n\n**torch.compile** — {line_versus(compiled[0], lines)}"
    return text


def def_hover(profile: Profile, qualname: str, offset: int, stale: bool) -> str:
    """Verdict, timing (cold vs steady), top lines and a link to the trace."""
    parts = [def_markdown(profile.report, qualname, headline(profile), offset, stale)]
    if profile.comparison is not None:
        from torchscope.lsp.compare_presentation import compare_hover

        parts.append(compare_hover(profile.comparison))
    if profile.ranks is not None:
        parts.append(ranks_markdown(profile.ranks))
    parts.append(command_link("Open trace", CLIENT_OPEN_TRACE, {"path": profile.trace_path}))
    return "\n\n".join(parts)


def headline_title(profile: Optional[Profile], stale: bool) -> Optional[str]:
    if profile is None:
        return None
    title = headline(profile)
    return f"{title} (stale)" if stale else title
