"""The eager vs ``torch.compile`` comparison as typed objects, and their JSON form.

:func:`.compare.compare_runs` builds a :class:`Comparison`; the CLI and the language server
hold it, and ``protocol.to_builtins`` of it is the ``compare`` object of
``profile --compare-compile --json`` (the key order and the NaN/inf → ``null`` rule are part of
that contract). Its words are ``torchscope.report.compare``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from ...protocol import json_as
from ..results import ABComparison, Finding
from .ab import ABRounds
from .compiled_lines import CompiledKernel, CompiledLine, CompiledLines

BIAS_OPS = frozenset({"aten::addmm", "aten::addmv", "aten::baddbmm", "aten::addbmm"})
"""GEMMs with an epilogue that first copies ``self`` (the bias) into the output."""

VERDICTS = ("keep-eager", "compile-wins", "no-difference", "inconclusive")


@dataclass(frozen=True)
class OpRow:
    """One op name in the profiled steps; numbers per call of the function."""

    name: str
    calls: float
    self_cpu_us: float
    within: Optional[str] = None
    """The nearest enclosing op that does work (e.g. ``aten::addmm`` for its ``copy_``)."""


@dataclass(frozen=True)
class CopyRow:
    """Copies of one kind issued from one place; numbers per call."""

    kind: str
    """``cpu`` (a host ``aten::copy_``) or the device memcpy kind: ``DtoD``, ``HtoD``…"""
    op: str
    within: Optional[str]
    calls: float
    bytes: float
    time_us: float
    """Device time of the memcpys, or CPU self time of the host copy."""

    @property
    def is_bias_copy(self) -> bool:
        return self.within in BIAS_OPS


@dataclass(frozen=True)
class CompileMeta:
    """What the worker measured about the compile, beside the two traces."""

    mode: str = "default"
    compile_s: Optional[float] = None
    error: str = ""
    error_kind: str = ""
    recompiles: int = 0
    graph_breaks: list[str] = field(default_factory=list)
    graph_code: dict[str, str] = field(default_factory=dict)
    eager_us: list[float] = field(default_factory=list)
    """Per-call µs of eager in the timing's interleaved rounds (round i of both sides ran back
    to back: they pair by index)."""
    compiled_us: list[float] = field(default_factory=list)
    rounds: Optional[ABRounds] = None
    """Both sides' rounds with their waits for a CPU, the machine and each side's stability
    (``ABRounds.of`` the two sides' measurements); None: only the times above."""


@dataclass(frozen=True)
class SideVerdict:
    """One side's own profile verdict."""

    id: str
    headline: str


@dataclass(frozen=True)
class Graph:
    """One ``CompiledFxGraph`` and the generated code Inductor wrote for it."""

    hash: str
    code_path: Optional[str]


@dataclass(frozen=True)
class CompiledInfo:
    """What only the compiled side has."""

    compile_s: Optional[float]
    graphs: list[Graph]
    recompiles: int
    compile_ids: list[str]
    graph_breaks: list[str]


@dataclass(frozen=True)
class CompareSide:
    """One side's numbers per call: unprofiled timing, profiled op time, copies, ops."""

    median_us: Optional[float]
    min_us: Optional[float]
    max_us: Optional[float]
    cold_us: Optional[float]
    calls_timed: int
    cpu_us: float
    profiled_us: float
    device_us: float
    launches: float
    copies: list[CopyRow]
    copy_count: float
    copy_bytes: float
    op_count: float
    ops: list[OpRow]
    verdict: SideVerdict
    stable: bool = True
    """``profile``'s stability checks over this side's rounds (``verdict.stable``)."""
    spread: float = 0.0
    """The side's rounds' interquartile range over median (``timing.spread``)."""
    busy_share: Optional[float] = None
    """Other work's share of the machine's cores over the rounds (None: not measured)."""
    unstable_reason: str = ""
    """When not ``stable``: ``unstable: …; rerun, or raise --timing-budget``."""
    top_level_ops: float = 0.0
    """Top-level ops per call, as the steps table counts them (``op_count`` counts every op,
    nested ones included)."""
    compiled: Optional[CompiledInfo] = field(default=None, metadata=json_as(flatten=True))
    """Only on the compiled side; its fields are inline in the JSON."""
    trace_path: Optional[str] = field(default=None, metadata=json_as(omit_none=True))
    kernels: Optional[list[CompiledKernel]] = field(default=None, metadata=json_as(omit_none=True))
    """The compiled side's kernels with their lines, when it has per-line times."""


@dataclass(frozen=True)
class OpChange:
    """An op the compiled run dispatches more or less often than eager (per call)."""

    name: str
    eager: float
    compiled: float


@dataclass(frozen=True)
class OpChanges:
    removed: list[OpChange]
    added: list[OpChange]
    summary: str
    """``aten::mm + aten::add → aten::addmm`` (trivial metadata ops left out); '' for none."""


@dataclass(frozen=True)
class CompareVerdict:
    """``keep-eager`` / ``compile-wins`` / ``no-difference`` with its headline."""

    id: str
    headline: str
    ratio: float
    """Compiled / eager time per call (unprofiled), the ratio of the rounds' medians."""
    band: float
    """The no-difference band, ±5 % (``interval.NO_DIFFERENCE_BAND``)."""
    noise: float = 0.0
    """The rounds' measured noise, relative to the ratio (it widens the interval)."""
    ci_low: float = 0.0
    ci_high: float = 0.0
    """The ratio's 95 % interval over the paired rounds, widened by the noise: a difference is
    called only when all of it clears the band."""
    rounds: int = 0


@dataclass(frozen=True)
class CompareError:
    kind: str
    message: str


@dataclass(frozen=True)
class LinesShown:
    """What the ``compare`` object says of ``Comparison.lines``."""

    lines: list[CompiledLine]
    lines_note: str


def _lines_json(lines: CompiledLines) -> LinesShown:
    return LinesShown(lines.lines, lines.note)


@dataclass(frozen=True)
class Comparison:
    """Eager vs compiled; ``compiled``/``changes``/``verdict`` are None when the compile failed
    (then ``error`` says why and the eager side still stands)."""

    mode: str
    eager: CompareSide
    compiled: Optional[CompareSide] = None
    changes: Optional[OpChanges] = None
    verdict: Optional[CompareVerdict] = None
    findings: list[Finding] = field(default_factory=list)
    error: Optional[CompareError] = None
    graph_breaks: Optional[list[str]] = field(default=None, metadata=json_as(omit_none=True))
    """Only with ``error``: Dynamo's graph-break reasons before the compile failed."""
    comparison: Optional[ABComparison] = None
    """The A/B engine's object, compiled against eager (``ab.compare_rounds``)."""
    rules_skipped: dict[str, str] = field(default_factory=dict, metadata=json_as(skip=True))
    """Comparison rule id → why it did not apply (not part of the JSON)."""
    lines: Optional[CompiledLines] = field(
        default=None, metadata=json_as(omit_none=True, flatten=True, view=_lines_json)
    )
    """Per line, eager against compiled from the kernels' provenance (``compiled_lines``)."""

    def with_lines(self, lines: CompiledLines) -> Comparison:
        """With the compiled side's per-line times (its kernels on the compiled side)."""
        compiled = self.compiled and replace(self.compiled, kernels=lines.kernels)
        return replace(self, lines=lines, compiled=compiled)
