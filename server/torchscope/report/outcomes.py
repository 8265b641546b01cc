"""What the renderers read of a job's outcome, as protocols over analysis and protocol types.

The host's ``ProfileOutcome`` and ``CompareOutcome`` (``host/profile_run.py``,
``host/compare_run.py``) satisfy them structurally; ``report/`` names only these, so it imports
nothing of ``host/`` (not even for type checking) and the layers stay one-way.
"""

from __future__ import annotations

from typing import Optional, Protocol

from torchscope.analysis import Comparison
from torchscope.analysis.results import Report
from torchscope.protocol import ProfileResult


class ProfiledFunction(Protocol):
    """The function a profile ran on (``targets.Target``)."""

    @property
    def file(self) -> str: ...

    @property
    def qualname(self) -> str: ...

    @property
    def def_line(self) -> int: ...


class ProfiledCall(Protocol):
    """One profile: the function, the call, the worker's result and the analysis' report."""

    @property
    def target(self) -> ProfiledFunction: ...

    @property
    def call(self) -> Optional[str]: ...

    @property
    def result(self) -> ProfileResult: ...

    @property
    def report(self) -> Report: ...


class ComparedCall(Protocol):
    """A compile comparison: the eager profile and the comparison."""

    @property
    def profile(self) -> ProfiledCall: ...

    @property
    def compare(self) -> Comparison: ...
