"""What the server knows per document: the latest diagnostics of each profiled function."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from lsprotocol import types

from torchscope.host.profile_run import ProfileOutcome


@dataclass
class FunctionResult:
    qualname: str
    diagnostics: list[types.Diagnostic]
    outcome: Optional[ProfileOutcome] = None


@dataclass
class ResultStore:
    by_uri: dict[str, dict[str, FunctionResult]] = field(default_factory=dict)

    def put(self, uri: str, result: FunctionResult) -> None:
        self.by_uri.setdefault(uri, {})[result.qualname] = result

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return [d for r in self.by_uri.get(uri, {}).values() for d in r.diagnostics]

    def latest(self, uri: str, qualname: str) -> Optional[FunctionResult]:
        return self.by_uri.get(uri, {}).get(qualname)

    def clear(self, uri: Optional[str] = None) -> list[str]:
        """Forget results (of one document or all); returns the URIs to republish."""
        uris = [uri] if uri is not None else list(self.by_uri)
        for key in uris:
            self.by_uri.pop(key, None)
        return uris
