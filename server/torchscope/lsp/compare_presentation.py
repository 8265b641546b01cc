"""A ``torch.compile`` comparison in the editor: the def-line diagnostic, the hover section and
the lens title.

The hover's text is :func:`~torchscope.report.compare.comparison_markdown` (the same
table the CLI prints as text); this module adds the client's command links (generated code,
compiled trace). The comparison's findings become related information of the diagnostic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from lsprotocol import types

from torchscope.analysis import Comparison
from torchscope.lsp.constants import CLIENT_OPEN_GENERATED_CODE, CLIENT_OPEN_TRACE, SOURCE
from torchscope.report.compare import comparison_markdown
from torchscope.report.markdown import command_link

#: Compare verdicts that recommend a change are warnings; the others are information.
WARNING_VERDICTS = ("compile-wins",)

_LABELS = {
    "keep-eager": "keep eager",
    "compile-wins": "compile wins",
    "no-difference": "no difference",
}


def lens_title(compare: Optional[Comparison]) -> Optional[str]:
    """``torch.compile: keep eager (3.4× slower compiled)`` after a comparison, else None."""
    if compare is None:
        return None
    verdict = compare.verdict
    if verdict is None:
        return "torch.compile failed (eager shown) · retry"
    label = _LABELS.get(verdict.id, verdict.id)
    ratio = verdict.ratio
    if 0 < ratio < float("inf") and verdict.id != "no-difference":
        factor = ratio if ratio >= 1 else 1 / ratio
        label += f" ({factor:.1f}× {'slower' if ratio >= 1 else 'faster'} compiled)"
    return f"torch.compile: {label}"


def compare_diagnostic(
    compare: Comparison, range_: types.Range, uri: str, qualname: str
) -> types.Diagnostic:
    """The comparison's verdict (or the compile failure) on the ``def`` line; its findings
    ride along as related information."""
    verdict = compare.verdict
    if verdict is None:
        message = compare.error.message if compare.error else "torch.compile failed"
        first = message.strip().splitlines()[0] if message.strip() else message
        return types.Diagnostic(
            range=range_,
            message=f"{first} — the eager profile is shown",
            severity=types.DiagnosticSeverity.Warning,
            source=SOURCE,
            code=compare.error.kind if compare.error else "compile-failed",
            data={"qualname": qualname, "compare": True},
        )
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=range_), message=f"{f.rule}: {f.message}"
        )
        for f in compare.findings
    ]
    return types.Diagnostic(
        range=range_,
        message=verdict.headline,
        severity=(
            types.DiagnosticSeverity.Warning
            if verdict.id in WARNING_VERDICTS
            else types.DiagnosticSeverity.Information
        ),
        source=SOURCE,
        code=verdict.id,
        related_information=related or None,
        data={
            "qualname": qualname,
            "compare": True,
            "trace_path": compare.compiled.trace_path if compare.compiled else None,
        },
    )


def _links(compare: Comparison) -> list[str]:
    compiled = compare.compiled
    if compiled is None:
        return []
    links = []
    for graph in compiled.compiled.graphs if compiled.compiled else []:
        name = f"## Call CompiledFxGraph {graph.hash[:12]}… ##"
        if graph.code_path:
            title = f"open the generated code ({Path(graph.code_path).name})"
            link = command_link(title, CLIENT_OPEN_GENERATED_CODE, {"path": graph.code_path})
            links.append(f"`{name}`: {link}")
        else:
            links.append(f"`{name}`: generated code not found in Inductor's cache")
    if compiled.trace_path:
        links.append(
            command_link("Open compiled trace", CLIENT_OPEN_TRACE, {"path": compiled.trace_path})
        )
    return links


def compare_hover(compare: Comparison) -> str:
    """The hover section: the comparison's Markdown, then links to the generated code."""
    links = _links(compare)
    text = comparison_markdown(compare)
    return f"{text}\n\n{' · '.join(links)}" if links else text
