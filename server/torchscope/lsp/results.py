"""What the server knows per document, and how it follows edits.

Results belong to a document version: an edit above a profiled function shifts its results by
the number of lines inserted or removed; an edit inside it marks them stale (hints keep their
numbers with ``(stale)``, line diagnostics go, the verdict says re-profile). Results outlive
closing the document: on reopen they are kept if the file's text is what they were last synced
with, shifted if only the lines above the function changed, and stale otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from lsprotocol import types

from torchscope.analysis import Comparison, Diff, RanksReport, Report
from torchscope.source.targets import TargetError, function_named


@dataclass(frozen=True)
class Profile:
    """What the editor keeps of one finished profile: the typed report and what it needs
    beside it (the JSON form is made only for the client, in ``jobs.publish_profile``)."""

    report: Report
    target_file: str
    """The profiled file as the worker saw it (findings without a file are in it)."""
    trace_path: str
    comparison: Optional[Comparison] = None
    """The eager vs ``torch.compile`` comparison, when the job was one."""
    diff: Optional[Diff] = None
    """Before and after (against a revision, or the source of the previous profile)."""
    source: str = ""
    """The file's text when profiled: what a re-profile after an edit compares with (the
    earlier version is run again, interleaved; no number of this run is reused)."""
    ranks: Optional[RanksReport] = None
    """The cross-rank view of a multi-process profile (``report`` is the slowest rank's)."""

    @property
    def gpu(self) -> bool:
        return self.report.device.kind == "cuda"


@dataclass
class ProfiledFunction:
    """The latest profile (or failure) of one function in one document."""

    uri: str
    qualname: str
    first_line: int  # 1-based, current (after shifts): decorators included
    def_line: int
    end_line: int
    report: Optional[Profile] = None  # None after a failure
    failure: Optional[types.Diagnostic] = None
    offset: int = 0
    """Lines inserted (+) or removed (-) above the function since it was profiled."""
    stale: bool = False
    synced_text: str = ""
    """The document text these positions are valid for."""
    function_text: str = ""
    """The function's own source when profiled: an unchanged function can be found again."""

    def current_line(self, profiled_line: int) -> int:
        """Where a 1-based line of the profiled source is now (1-based)."""
        return profiled_line + self.offset

    def covers(self, line: int) -> bool:
        """Does the 1-based current ``line`` lie in the function (decorators included)?"""
        return self.first_line <= line <= self.end_line

    def shift(self, delta: int) -> None:
        self.offset += delta
        self.first_line += delta
        self.def_line += delta
        self.end_line += delta


def function_source(text: str, first_line: int, end_line: int) -> str:
    return "\n".join(text.splitlines()[first_line - 1 : end_line])


@dataclass
class ResultStore:
    by_uri: dict[str, dict[str, ProfiledFunction]] = field(default_factory=dict)

    def put(self, result: ProfiledFunction) -> None:
        self.by_uri.setdefault(result.uri, {})[result.qualname] = result

    def functions(self, uri: str) -> list[ProfiledFunction]:
        return list(self.by_uri.get(uri, {}).values())

    def latest(self, uri: str, qualname: str) -> Optional[ProfiledFunction]:
        return self.by_uri.get(uri, {}).get(qualname)

    def at_line(self, uri: str, line: int) -> Optional[ProfiledFunction]:
        """The innermost profiled function covering the 1-based ``line``."""
        best: Optional[ProfiledFunction] = None
        for result in self.functions(uri):
            if result.covers(line) and (best is None or result.first_line >= best.first_line):
                best = result
        return best

    def clear(self, uri: Optional[str] = None) -> list[str]:
        """Forget results (of one document or all); returns the URIs to republish."""
        uris = [uri] if uri is not None else list(self.by_uri)
        for key in uris:
            self.by_uri.pop(key, None)
        return uris

    def apply_change(self, uri: str, change: Any, new_text: str) -> bool:
        """Follow one content change; True when anything moved or went stale."""
        moved = False
        for result in self.functions(uri):
            if result.failure is not None and result.report is None:
                continue
            before = (result.offset, result.stale)
            if isinstance(change, types.TextDocumentContentChangePartial):
                _follow_range_edit(result, change)
            else:
                relocate(result, new_text)
            result.synced_text = new_text
            moved = moved or before != (result.offset, result.stale)
        return moved

    def reopen(self, uri: str, text: str) -> bool:
        """On ``didOpen``: keep, shift or stale results against the text now in the file."""
        changed = False
        for result in self.functions(uri):
            if result.synced_text == text:
                continue
            before = (result.offset, result.stale)
            relocate(result, text)
            result.synced_text = text
            changed = changed or before != (result.offset, result.stale)
        return changed


def _follow_range_edit(
    result: ProfiledFunction, change: types.TextDocumentContentChangePartial
) -> None:
    start = change.range.start.line + 1  # 1-based
    end = change.range.end.line + 1
    inserted = change.text.count("\n")
    delta = inserted - (end - start)
    if end < result.first_line or (end == result.first_line and change.range.end.character == 0):
        result.shift(delta)  # entirely above the function
    elif start > result.end_line:
        return  # below the function
    else:
        result.stale = True
        result.end_line = max(result.end_line + delta, result.def_line)


def relocate(result: ProfiledFunction, text: str) -> None:
    """Find the function again by name; unchanged source → shift, else (or unparsable) stale."""
    try:
        target = function_named(text, result.uri, result.qualname)
    except TargetError:
        result.stale = True
        return
    if function_source(text, target.first_line, target.end_line) != result.function_text:
        result.stale = True
    result.shift(target.first_line - result.first_line)
    result.end_line = target.end_line
