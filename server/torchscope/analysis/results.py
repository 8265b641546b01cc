"""The analysis result: plain dataclasses that the CLI, the LSP layer and the tests read.

``protocol.to_builtins(report)`` is the wire and ``--json`` format (``json_as`` says where a
field differs from its name and value): only dicts, lists, str, float, int, bool and None, so
it serialises with ``json`` and ``msgpack`` alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# The worker's measurements, as the protocol carries them: read here, not copied.
from ..protocol import Machine as Machine
from ..protocol import Measurements as Measurements
from ..protocol import Peaks as Peaks
from ..protocol import json_as

if TYPE_CHECKING:
    from .measure.parts import CalleeStats, LineStats, MemorySummary

SEVERITIES = ("error", "warning", "information", "hint")


@dataclass(frozen=True)
class Device:
    """What ran the work: ``kind`` is ``cpu`` or ``cuda``."""

    kind: str
    name: str


@dataclass(frozen=True)
class Cause:
    """One cause of the time per call and what it costs (``analysis/verdict/causes.py``)."""

    cause: str
    """``dispatch``, ``threads``, ``page-faults``, ``rng``, ``bandwidth``, ``compute``,
    ``sync``, ``input`` or ``comm``."""
    us_per_call: float
    share: float
    """``us_per_call`` over the time per call (per step on a GPU), 0-1."""
    hidden: bool = False
    """On a GPU idle for more than 20 % of the step: the device's own work (kernels,
    collectives), which waits on the host, so it is not what holds the step and ranks after
    the causes of the idle time (``causes.gpu_ranked``)."""


@dataclass(frozen=True)
class Borderline:
    """A verdict whose deciding figure is within the steps' spread of its threshold."""

    runner_up: str
    """The verdict id the most steps that decide otherwise get on their own."""
    margin: float
    """Deciding figure − threshold (a share: 0.007 is 0.7 points above it)."""
    steps: int
    """How many steps decide ``runner_up`` on their own."""
    of: int
    """Out of how many steps."""


VERDICT_IDS = (
    "compute-bound",
    "overhead-bound",
    "memory-bound",
    "input-bound",
    "sync-bound",
    "copy-bound",
    "low-efficiency",
    "compute-heavy",
    "rng-bound",
    "no-activity",
)
"""Every ``Verdict.id`` (docs/findings.md#verdicts): the verdict's diagnostic carries it as its
code, and faces and tests tell the verdict from findings by it."""


@dataclass(frozen=True)
class Verdict:
    """The one-line answer and the two numbers that justify it (µs per call/step)."""

    id: str
    headline: str
    cpu_us: float
    device_us: float
    overhead_share: float | None = None
    """CPU-only runs: dispatch cost / time per call. GPU runs: share of the step the device
    sat idle (1 − busy share)."""
    basis: str = "profile"
    """``measurements`` when the time per call came from the unprofiled timing pass."""
    efficiency: float | None = None
    """Achieved / peak (0-1) of the dominant op, when its FLOPs or bytes are known."""
    cause: str = ""
    """The cause the headline names (one of ``Cause.cause``; "" when nothing ran)."""
    causes: list[Cause] = field(default_factory=list)
    """Every measured cause with its cost, costliest first."""
    borderline: Borderline | None = None
    """Set when the deciding figure is within the steps' spread of its threshold (see
    ``regimes``)."""
    stable: bool = True
    """False when the timing behind it cannot be trusted (``analysis/verdict/stability.py``)."""
    unstable_reason: str = ""
    """When not ``stable``: why and what to do, one line (``unstable: …; rerun, or …``)."""


@dataclass(frozen=True)
class Timing:
    """Unprofiled wall time per call, from :class:`Measurements`."""

    cold_us: float
    min_us: float
    median_us: float
    max_us: float
    calls: int
    wait_us: float | None = None
    """Median µs per call spent waiting for a CPU that another process held (None: not
    measured); the verdict's causes share out the rest of ``median_us``."""
    samples: int = 0
    """Timing samples behind these numbers (a sample of a fast call is a batch's mean)."""
    spread: float = 0.0
    """Interquartile range over median of the samples: 0.05 means the middle half of them lie
    within 5 % of the median's size."""


@dataclass(frozen=True)
class SideSpreads:
    """Each side's interquartile range over median in the rounds (``protocol.spread``)."""

    before: float
    after: float


COMPARISON_DECISIONS = ("faster", "slower", "no-difference", "inconclusive")


@dataclass(frozen=True)
class ABComparison:
    """B against A from interleaved rounds: the ``comparison`` object of every command that
    compares two things (``diff``, ``check``, ``fix --try``, ``--compare-compile``, adjacent
    sweep rows). Built by ``analysis/multi/ab.py``; held to itself by
    ``analysis/verdict/comparison_check.py``."""

    decision: str
    """One of :data:`COMPARISON_DECISIONS` (B faster or slower than A)."""
    ratio: float
    """B / A per call: the median over the kept rounds."""
    interval: list[float]
    """``[low, high]``: the ratio's 95 % interval (paired bootstrap, widened by the noise)."""
    band: float
    """The no-difference band: ±``band`` around 1."""
    rounds: int
    """Interleaved rounds timed (the kept ones and ``dropped_rounds``)."""
    dropped_rounds: int
    """Rounds left out because a side waited for a CPU another process held."""
    spread: SideSpreads
    busy_share: float | None
    """Other processes' share of the machine's cores over the rounds (None: not measured)."""
    stable: bool
    """Both sides' timing passed ``profile``'s stability checks and most rounds were kept."""
    reason: str
    """Why this decision, one line; names the load and any instability."""
    phrase: str = ""
    """``formatting.ratio_phrase`` of ``ratio`` and ``interval``: the words every face shows."""
    added_rounds: int = 0
    """Rounds timed past the budget because the ratio was not yet known."""
    noise: float = 0.0
    """The kept rounds' measured noise, relative to the ratio (``interval.measured_noise``)."""


@dataclass(frozen=True)
class FixOffer:
    """A finding's fix: ``rule`` is the fix's id (``torchscope fix --try RULE``), ``measured``
    None until it was tried, then ``FixTrial.measured()`` (verdict, ratio, interval,
    same_outputs, refused, message)."""

    rule: str
    title: str
    measured: dict[str, Any] | None = None


@dataclass(frozen=True)
class Finding:
    """One rule match. ``line``/``file`` locate it in source where the trace allows."""

    rule: str
    severity: str
    message: str
    cost_us: float
    line: int | None = None
    file: str | None = None
    title: str = ""
    docs: str = ""
    step: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    """Rule-specific numbers; ``once: True`` marks a one-time cost (cold start) rather than
    a cost per step."""
    fix: FixOffer | None = field(default=None, metadata=json_as(omit_none=True))
    """A measured fix whose rewrite applies to the profiled function (``source/fixes/``);
    left out of the report's JSON when None."""
    rank: int | None = field(default=None, metadata=json_as(omit_none=True))
    """The rank it is about, in a multi-process report (``RanksReport.merged``)."""


@dataclass(frozen=True)
class TopOp:
    """One op name aggregated over the analysed steps; times are per step."""

    name: str
    calls: int
    self_cpu_us: float
    device_us: float
    cpu_us: float = 0.0
    """Inclusive CPU time per step."""
    gflops: float | None = None
    """Achieved GFLOP/s (GEMMs and convolutions with recorded shapes)."""
    gbps: float | None = None
    """Achieved GB/s (bytes moved from recorded shapes and dtypes)."""
    efficiency: float | None = None
    """Achieved / matching peak (matmul FLOP/s for GEMMs, bandwidth otherwise), 0-1."""
    op_class: str | None = None
    """The op's class in the cost model (``measure/opclass``: ``gemm``, ``convolution``,
    ``attention``, ``normalization``, ``elementwise``, ``reduction``, ``rng``,
    ``copy/layout``, ``indexing/embedding``, ``communication``, ``optimizer``); None: not
    classified."""
    flops: float | None = None
    """FLOPs per step from the cost model (None: the class has no FLOP model, or the shapes
    were not recorded)."""
    bytes: float | None = None
    """Bytes moved per step from the cost model (None where not modelled)."""


@dataclass(frozen=True)
class KernelStat:
    """One kernel name across the analysed steps: its device time per step as min / median /
    max over steps (never a mean alone), and its launch delay."""

    name: str
    calls: int
    """Launches over all analysed steps."""
    median_us: float
    min_us: float
    max_us: float
    launch_delay_us: float | None
    """Median time from the launch call's start to the kernel's start (None: not linked)."""


@dataclass(frozen=True)
class Gap:
    """A stretch of device idle time inside a step, and the CPU work under it."""

    start_us: float
    """Offset from the step's start."""
    dur_us: float
    device: int
    under: str | None
    """Innermost annotation (or top-level op) running on the CPU at the gap's middle."""


@dataclass(frozen=True)
class StepMetrics:
    """Per-step numbers (times in µs)."""

    name: str
    wall_us: float
    cpu_op_us: float
    ops: int
    """Top-level ops dispatched in the step (ops inside ops are not counted)."""
    device_busy_us: float
    """Union of the device intervals this step's calls launched, wherever they ran."""
    device_busy_share: float
    """``device_busy_us`` over ``span_us``."""
    device_time_us: float
    """Union of the device intervals this step's calls launched, wherever they ran: the
    device time per call, also when the CPU runs ahead of the device."""
    kernel_us: float
    """Kernel time launched by the step's calls (so are memcpy, memset, comm, copies)."""
    memcpy_us: float
    memset_us: float
    comm_us: float
    """NCCL (and other collective) kernel time."""
    launches: int
    launch_delay_us: float | None
    """Median time from launch call to kernel start in the step (None: no linked kernels)."""
    syncs: int
    sync_us: float
    """CPU time blocked in synchronising calls, including pageable-memory copies."""
    copies: int
    copy_bytes: dict[str, int]
    dataloader_us: float
    """CPU time inside DataLoader ``__next__``."""
    input_wait_us: float
    """Device idle time while the CPU was inside DataLoader ``__next__``."""
    largest_gaps: list[Gap]
    start_us: float = 0.0
    """Offset of the step from the first analysed step."""
    span_us: float = 0.0
    """From the step's CPU start (or, while the device still runs the previous step's work,
    where the previous span ended) to the later of its CPU end and the end of the last device
    work it launched: the window of ``device_busy_share``."""


@dataclass
class Report:
    """Everything one analysis found; see the module docstring for the wire format."""

    device: Device
    verdict: Verdict
    timing: Timing | None
    profiler_overhead_us: float | None
    findings: list[Finding]
    top_ops: list[TopOp]
    steps: list[StepMetrics]
    devices: list[Device] = field(default_factory=list)
    top_kernels: list[KernelStat] = field(default_factory=list)
    kernels_recorded: int = 0
    step_source: str = "trace"
    notes: list[str] = field(default_factory=list)
    rules_skipped: dict[str, str] = field(default_factory=dict)
    """Rule id → why it could not judge this trace (e.g. shapes not recorded)."""
    callees: list[CalleeStats] = field(default_factory=list)
    """Workspace functions the profiled one called, with totals (needs ``with_stack``)."""
    lines: list[LineStats] = field(default_factory=list)
    """Per-line numbers from the worker's line markers, hottest first (see ``lines``)."""
    peaks: Peaks | None = None
    """The peaks efficiencies are measured against (None: none known for this device)."""
    memory: MemorySummary | None = field(default=None, metadata=json_as(omit_none=True))
    """Peak and page faults (see ``memory``); None for a bare trace without memory events."""
    machine: Machine | None = field(default=None, metadata=json_as(omit_none=True))
    """How busy the machine was during the job (a profile on Linux; None otherwise)."""
