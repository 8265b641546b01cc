"""The messages the daemon and the worker exchange, and how they travel.

This is the only module both sides import: the daemon (which never imports torch) and the
worker (which never imports pygls). It depends on the standard library and msgpack only, and
stays importable on the oldest Python a user's torch may run on (3.9).

Framing: each message is one msgpack map (``to_builtins`` of it) prefixed by its length as a
4-byte big-endian unsigned integer. A map carries its kind under ``"type"``; ``decode`` turns
it back into the dataclass of that kind (``from_builtins``: nested results typed, each field
checked).

Over 400 lines on purpose: this file is the one contract between the two processes (every
message and the leaf types they carry, ``JobOptions`` and ``RunOptions`` with each option's one
default, the wire constants, the framing, and the one codec every result is written and read
with: ``to_builtins``, ``from_builtins``, ``json_as``), and the worker's bootstrap puts exactly
this module on the user's interpreter's path; splitting it would make a second shared module
that both sides must keep in step.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional, TypeVar, Union, get_args, get_origin, get_type_hints

PROTOCOL_VERSION = 3  # 3: typed parts (``measured``, nested sides); 2: one ``options`` map

#: Frames larger than this are refused: a corrupt length prefix (e.g. a stray ``print`` that
#: slipped into the pipe) must fail loudly instead of making the reader wait for gigabytes.
MAX_FRAME_BYTES = 64 * 1024 * 1024

_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The byte stream is not a valid sequence of torchscope frames."""


@dataclass
class Message:
    """Base of all messages; ``TYPE`` is the tag written into the frame."""

    TYPE: ClassVar[str] = ""


# -- one codec: every typed result to builtins (JSON, msgpack) and back ----------------------
# Results, messages and reports are dataclasses. ``to_builtins`` turns any of them into dicts,
# lists, str, int, float, bool and None; ``from_builtins`` rebuilds a typed value from those,
# checking each field against its annotation. A field says how it shows in the JSON with
# ``json_as`` metadata; nothing else writes a result out by hand.


@dataclass(frozen=True)
class FieldCodec:
    """How one dataclass field is written: under ``name`` (else its own), left out when None
    (``omit_none``) or always (``skip``), its dict merged into the parent's (``flatten``), or
    first turned into another value by ``view`` (a field whose JSON is a summary of it)."""

    name: str = ""
    omit_none: bool = False
    skip: bool = False
    flatten: bool = False
    view: Optional[Callable[[Any], Any]] = None


_PLAIN = FieldCodec()


def json_as(
    *,
    name: str = "",
    omit_none: bool = False,
    skip: bool = False,
    flatten: bool = False,
    view: Optional[Callable[[Any], Any]] = None,
) -> dict[str, FieldCodec]:
    """A field's JSON form, as its metadata: ``field(default=None, metadata=json_as(...))``."""
    return {"codec": FieldCodec(name, omit_none, skip, flatten, view)}


def _codecs(cls: type) -> list[tuple[str, FieldCodec]]:
    found = _CODECS.get(cls)
    if found is None:
        found = [(f.name, f.metadata.get("codec", _PLAIN)) for f in dataclasses.fields(cls)]
        _CODECS[cls] = found
    return found


_CODECS: dict[type, list[tuple[str, FieldCodec]]] = {}


_CHECKS: dict[type, Callable[[Any], None]] = {}


def register_check(cls: type, check: Callable[[Any], None]) -> None:
    """Run ``check`` on every ``cls`` the codec encodes or decodes: the report's self-check
    (``analysis/verdict/consistency``) registers itself when ``TORCHSCOPE_SELF_CHECK=1``, so a
    report changed after its analysis (a note, a sweep row) is held to it at every edge too."""
    _CHECKS[cls] = check


def to_builtins(value: Any, finite: bool = True) -> Any:
    """``value`` as builtins: a dataclass as a dict of its fields (as ``json_as`` says),
    tuples as lists, dict keys as text; with ``finite``, NaN and inf as None (JSON has
    neither; a frame keeps them)."""
    if isinstance(value, float):
        return None if finite and not math.isfinite(value) else value
    if value is None or isinstance(value, (str, int)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        check = _CHECKS.get(type(value))
        if check is not None:
            check(value)
        out: dict[str, object] = {}
        for name, codec in _codecs(type(value)):
            item = getattr(value, name)
            if codec.skip or (codec.omit_none and item is None):
                continue
            built = to_builtins(codec.view(item) if codec.view else item, finite)
            if codec.flatten:
                out.update(built or {})
            else:
                out[codec.name or name] = built
        return out
    if isinstance(value, Mapping):
        return {str(k): to_builtins(v, finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_builtins(v, finite) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} has no JSON form")


def json_keys(cls: type) -> list[str]:
    """The keys ``to_builtins`` may write for a ``cls``, in order (those left out when None
    too): the schema the extension's ``types.ts`` is checked against. A flattened field adds
    its type's keys (a ``view``'s: its return annotation's)."""
    hints = _hints(cls)
    keys: list[str] = []
    for name, codec in _codecs(cls):
        if codec.skip:
            continue
        if not codec.flatten:
            keys.append(codec.name or name)
            continue
        inner: Any = get_type_hints(codec.view)["return"] if codec.view else hints[name]
        args = [a for a in get_args(inner) if a is not type(None)]
        keys += json_keys(args[0] if get_origin(inner) is Union else inner)
    return keys


T = TypeVar("T")


def from_builtins(cls: type[T], data: Any) -> T:
    """The ``cls`` that ``to_builtins`` wrote as ``data``; unknown keys are ignored (a newer
    peer), a missing or mistyped field is a ``ProtocolError`` naming it."""
    value: T = _decode(cls, data, cls.__name__)
    return value


def _decode(tp: Any, data: Any, where: str) -> Any:
    if tp is Any:
        return data
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union:
        if data is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]  # only Optional[X] is used
        return _decode(inner, data, where)
    if dataclasses.is_dataclass(tp):
        return _decode_dataclass(tp, data, where)
    if origin in (list, tuple):
        _expect(isinstance(data, (list, tuple)), "a list", data, where)
        if origin is tuple and args and args[-1] is not Ellipsis:  # tuple[A, B, C]
            _expect(len(args) == len(data), f"{len(args)} items", data, where)
            return tuple(_decode(a, v, f"{where}[]") for a, v in zip(args, data))
        items = [_decode(args[0] if args else Any, v, f"{where}[]") for v in data]
        return tuple(items) if origin is tuple else items
    if origin is dict or tp is dict:
        _expect(isinstance(data, Mapping), "a map", data, where)
        key_t, value_t = args or (Any, Any)
        return {
            (int(k) if key_t is int else k): _decode(value_t, v, f"{where}.{k}")
            for k, v in data.items()
        }
    if tp is float:
        if data is None:  # a NaN written to JSON
            return math.nan
        number = isinstance(data, (int, float)) and not isinstance(data, bool)
        _expect(number, "a number", data, where)
        return float(data)
    if tp in (int, str, bool):  # a bool is an int to Python, not to a peer
        plain = isinstance(data, tp) and (tp is bool or not isinstance(data, bool))
        _expect(plain, tp.__name__, data, where)
    return data


def _decode_dataclass(cls: Any, data: Any, where: str) -> Any:
    _expect(isinstance(data, Mapping), "a map", data, where)
    hints = _hints(cls)
    values: dict[str, object] = {}
    for name, codec in _codecs(cls):
        key = codec.name or name
        if codec.flatten:
            values[name] = _decode(hints[name], data, f"{where}.{name}")
        elif key in data and not codec.skip:
            values[name] = _decode(hints[name], data[key], f"{where}.{key}")
    try:
        built = cls(**values)
    except TypeError as exc:
        raise ProtocolError(f"{where} is missing fields: {exc}") from exc
    check = _CHECKS.get(cls)
    if check is not None:
        check(built)
    return built


def _hints(cls: type) -> dict[str, object]:
    """``cls``'s field annotations, evaluated once per class."""
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = get_type_hints(cls)
    return found


_HINTS: dict[type, dict[str, object]] = {}


def _expect(ok: bool, what: str, data: Any, where: str) -> None:
    if not ok:
        raise ProtocolError(f"{where} should be {what}, not {type(data).__name__}")


@dataclass
class Hello(Message):
    """First frame from a fresh worker: what the target interpreter can do."""

    TYPE: ClassVar[str] = "hello"
    protocol_version: int
    python_version: str
    python_executable: str
    torch_version: Optional[str]
    cuda_available: bool
    device_names: list[str] = field(default_factory=list)
    pid: int = 0
    error: Optional[str] = None  # e.g. torch missing or too old


#: Prefix of the ``record_function`` ranges the worker puts around each statement of the
#: profiled function (``torchscope:L<line>``); the analysis reads lines back from them.
LINE_MARKER_PREFIX = "torchscope:L"

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")
"""The ``torch.compile`` modes the CLI and the editor offer (the worker also accepts
``max-autotune``)."""

DEVICES = ("auto", "cpu", "cuda")
#: Process-group backends of a multi-process profile (``--backend``).
BACKENDS = ("auto", "gloo", "nccl")

#: The Perfetto UI's Content-Security-Policy lets it fetch a plain-http trace from one origin
#: only, ``http://127.0.0.1:9001``: ``host/trace_server.py`` (and the extension's
#: ``traceServer.ts``) serve there; the CLI's ``--open`` flags default to these.
PERFETTO_PORT = 9001
PERFETTO_ORIGIN = "https://ui.perfetto.dev"
#: Seconds to wait for the UI to fetch the trace before giving up.
PERFETTO_TIMEOUT_S = 300.0
#: Overrides for tests and self-hosted UIs (the public UI only fetches from 127.0.0.1:9001).
PERFETTO_ORIGIN_ENV = "TORCHSCOPE_PERFETTO_ORIGIN"
PERFETTO_PORT_ENV = "TORCHSCOPE_PERFETTO_PORT"


def _option(default: Any, help: str, **meta: Any) -> Any:
    """A ``JobOptions`` field: its default, the CLI's help text and its limits.

    ``flag``: the CLI flag (None: not a profile flag); ``setting``: the editor setting
    (``torchscope.<setting>`` in package.json; None: not an editor setting); ``minimum``,
    ``choices``: what ``JobOptions.updated`` accepts; ``size``: a memory size as text
    (``parse_size``; "" for the default), at least ``floor`` bytes (default ``MIN_MEMORY``).
    """
    return field(default=default, metadata={"help": help, **meta})


@dataclass(frozen=True)
class JobOptions:
    """How a job runs: every option that reaches a job, with its one default.

    The CLI (its flags are made from these fields), the editor's settings and per-command
    overrides all fill it with ``updated``; every request carries it.
    """

    steps: int = _option(5, "profiled calls", flag="--steps", setting="steps", minimum=1)
    warmup: int = _option(
        3, "unmeasured warmup calls", flag="--warmup", setting="warmup", minimum=0
    )
    timeout_s: float = _option(
        120.0, "seconds per job", flag="--timeout", setting="timeout", minimum=1
    )
    # A size (``parse_size``); "" means half the machine's RAM, which no literal could say.
    max_memory: str = _option(
        "",
        "stop the worker when its processes hold more memory than this, e.g. 12G "
        "(default: half the physical memory)",
        flag="--max-memory",
        setting="maxMemory",
        size=True,
    )
    device: str = _option("auto", "where the code runs", flag="--device", choices=DEVICES)
    with_stack: bool = _option(
        False,
        "record Python frames too: totals for the workspace functions it calls (slower)",
        flag="--with-stack",
    )
    memory: bool = _option(
        False,
        "record allocations per line too (bytes, allocations, alive after the call, peak)",
        flag="--memory",
        setting="memory",
    )
    compile_mode: str = _option(
        "default",
        "torch.compile mode for --compare-compile",
        flag="--mode",
        choices=COMPILE_MODES,
    )
    nproc: int = _option(
        0,
        "ranks to run on under torch.distributed.run (torchrun) on this host; 0: a "
        "directive's nproc=N, else one process",
        flag="--nproc",
        minimum=0,
    )
    backend: str = _option(
        "auto",
        "process-group backend with --nproc (auto: nccl where CUDA is used, else gloo)",
        flag="--backend",
        choices=BACKENDS,
    )
    workspace_root: Optional[str] = _option(None, "folder whose files count as the user's")
    timing_calls: int = _option(20, "samples the unprofiled timing pass takes at least", minimum=1)
    timing_budget_s: float = _option(
        2.0,
        "seconds the unprofiled timing pass may take (per side in a comparison); it stops "
        "sooner once the median is known to within two percent, so more budget means more "
        "samples when the calls are slow or noisy",
        flag="--timing-budget",
        minimum=0,
    )

    def updated(self, values: Mapping[str, Any]) -> JobOptions:
        """A copy with the fields named in ``values`` applied (other keys are ignored).

        Raises ``ValueError`` naming the option and what it accepts.
        """
        return _updated(self, values)


#: ``torchscope run --mode``: which calls of a target count (``worker/call_modes.py``).
RUN_MODES = ("any", "train", "eval")


@dataclass(frozen=True)
class RunOptions:
    """How ``torchscope run`` (and the editor's and the MCP server's run) treats the program,
    each option with its one default and limits, as ``JobOptions``: the CLI's flags, the
    editor command's checks and the MCP tool's parameters are made from these fields."""

    calls: int = _option(
        5, "calls of a target to see before profiling it", flag="--calls", minimum=1
    )
    mode: str = _option(
        "any",
        "which calls to profile: train (grad enabled and, for a module, .training), eval "
        "(the others) or any",
        flag="--mode",
        choices=RUN_MODES,
    )
    let_finish: bool = _option(
        False,
        "keep the program running after the profile (a pytest entry always finishes)",
        flag="--let-finish",
    )
    capture: bool = _option(
        False,
        "save the profiled call's arguments to .torchscope/inputs/ for `torchscope profile`",
        flag="--capture",
    )
    capture_limit: str = _option(
        "1G",
        "do not save a capture larger than this: bytes, or a size such as 1G",
        flag="--capture-limit",
        size=True,
        floor=0,
    )

    def updated(self, values: Mapping[str, Any]) -> RunOptions:
        """A copy with the fields named in ``values`` applied, checked as ``JobOptions``'."""
        return _updated(self, values)

    @property
    def capture_bytes(self) -> int:
        return parse_size(self.capture_limit, floor=0)


OptionsT = TypeVar("OptionsT", JobOptions, RunOptions)


def _updated(options: OptionsT, values: Mapping[str, Any]) -> OptionsT:
    given = [f for f in dataclasses.fields(options) if values.get(f.name) is not None]
    return dataclasses.replace(options, **{f.name: _checked(f, values[f.name]) for f in given})


def _checked(spec: dataclasses.Field[Any], value: Any) -> Any:
    kind: type[Any] = type(spec.default)
    minimum, choices = spec.metadata.get("minimum"), spec.metadata.get("choices")
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"option {spec.name!r} must be true or false, got {value!r}")
        return value
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"option {spec.name!r} must be a number, got {value!r}")
        if minimum is not None and value < minimum:
            raise ValueError(f"option {spec.name!r} must be a number >= {minimum}, got {value!r}")
        return kind(value)
    if spec.metadata.get("size"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(int(value))
        if not isinstance(value, str):
            raise ValueError(f"option {spec.name!r} must be a size such as 12G, got {value!r}")
        if value.strip():
            try:
                parse_size(value, spec.metadata.get("floor", MIN_MEMORY))
            except ValueError as exc:
                raise ValueError(f"option {spec.name!r}: {exc}") from None
        return value.strip()
    if not isinstance(value, str) or (choices and value not in choices):
        allowed = f"one of {', '.join(choices)}" if choices else "a string"
        raise ValueError(f"option {spec.name!r} must be {allowed}, got {value!r}")
    return value


_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


#: The least memory limit a worker may be given: torch alone needs more.
MIN_MEMORY = 16 << 20


def parse_size(text: str, floor: int = MIN_MEMORY) -> int:
    """``12G``, ``512MB``, ``1.5 GiB`` or a number of bytes; ValueError says what is allowed
    (a memory limit is at least ``floor``)."""
    cleaned = text.strip().upper().replace(" ", "").removesuffix("IB").removesuffix("B")
    number = cleaned.rstrip("KMGT")
    unit = cleaned[len(number) :]
    try:
        value = float(number) * _SIZE_UNITS[unit]
    except (ValueError, KeyError):
        raise ValueError(f"{text!r} is not a memory size: write e.g. 12G, 512M or 1.5GB") from None
    if value < floor:
        raise ValueError(f"memory limit {text!r} is below 16 MB: torch alone needs more")
    return int(value)


@dataclass
class Inputs:
    """Where a job's call inputs come from (``JobRequest.inputs``, echoed in the result)."""

    source: str = "call-expression"
    """``call-expression`` | ``directive`` | ``capture`` | ``run`` | ``attached`` (a running
    job's own calls, ``torchscope attach``)."""
    path: Optional[str] = None
    """A capture file, which the worker then loads instead of evaluating ``call``."""
    captured_at: Optional[str] = None
    # A batch sweep over a capture (``host/batch_sweep.py``): the batch size asked for (0: as
    # captured; None: no sweep) and the batch dimension (None: the worker finds it); the worker
    # fills in the captured size and how it chose the dimension.
    batch: Optional[int] = field(default=None, metadata=json_as(omit_none=True))
    batch_dim: Optional[int] = field(default=None, metadata=json_as(omit_none=True))
    captured_batch: Optional[int] = field(default=None, metadata=json_as(omit_none=True))
    batch_dim_from: Optional[str] = field(default=None, metadata=json_as(omit_none=True))


@dataclass
class JobRequest(Message):
    """Base of the requests that start a job; ``TYPE`` is the job kind (see ``JOB_KINDS``)."""

    CLI_FLAG: ClassVar[str] = ""
    """The ``torchscope profile`` flag that runs this kind instead of a plain profile ('':
    none); ``cli/common.py`` makes it from ``JOB_KINDS``."""
    CLI_HELP: ClassVar[str] = ""
    CLI_ALIAS: ClassVar[tuple[str, str]] = ("", "")
    """Another flag for the same job and its help (``profile --compiled``; '': none)."""

    job_id: int
    file: str
    qualname: str
    call: Optional[str]
    trace_path: str
    options: JobOptions = field(default_factory=JobOptions)
    inputs: Inputs = field(default_factory=Inputs)
    """Where the call's inputs come from; the worker echoes it in ``ProfileResult``."""


@dataclass
class ProfileRequest(JobRequest):
    """Ask the worker to profile one function; see DESIGN.md §2 for the passes."""

    TYPE: ClassVar[str] = "profile"


@dataclass
class Progress(Message):
    """One pass of a job has started."""

    TYPE: ClassVar[str] = "progress"
    job_id: int
    stage: str
    message: str
    fraction: float = 0.0


#: ``Progress.stage`` of the unsolicited message (``job_id`` 0) a worker sends once its
#: one-time start-up work is done (profiler warm-up, the calibration when it was idle).
WARM_STAGE = "warm"


@dataclass
class Output(Message):
    """Text the user's code wrote to stdout/stderr while a job ran."""

    TYPE: ClassVar[str] = "output"
    job_id: int
    stream: str
    text: str


@dataclass(frozen=True)
class Peaks:
    """What the device can do at best: matmul GFLOP/s per dtype and copy bandwidth (GB/s).

    ``source`` is ``measured`` (calibrated on this machine: ``worker/calibrate.py``) or
    ``spec-sheet`` (the vendor's numbers for a named device, for traces recorded elsewhere)."""

    matmul_gflops: dict[str, float]
    bandwidth_gbps: Optional[float]
    source: str = "measured"
    device: str = ""


@dataclass(frozen=True)
class Machine:
    """How busy the machine was during the job (``worker/stability.py``): other processes'
    CPU time and the hypervisor's steal time."""

    busy_share: float
    """(Other processes' CPU time + steal time) over the job's wall time × ``cores``, 0-1."""
    other_cores: float
    """Other processes' CPU time over the job's wall time: 0.48 is 48 % of one core."""
    steal_cores: float
    cores: int
    """The CPUs this process could run on."""


@dataclass(frozen=True)
class Measurements:
    """Numbers the worker measured with no profiler attached: the ground truth per call. The
    worker fills it, ``ProfileResult`` carries it, the analysis reads it (one type, no copy).

    ``call_us`` are wall times of steady-state calls (synchronised on CUDA),
    ``dispatch_floor_us`` is the cost of one trivial op (a 1-element ``torch.add``) measured on
    the same machine just before, so "N ops × floor" estimates pure dispatch cost.
    """

    cold_us: float
    call_us: list[float]
    dispatch_floor_us: float
    device_kind: str = "cpu"
    device_name: str = ""
    calls: int = 0
    """How many calls ``call_us`` stands for (a sample of a fast function is a batch's mean);
    0 when unknown."""
    peaks: Optional[Peaks] = None
    """This machine's calibrated matmul FLOP/s and copy bandwidth (``worker/calibrate.py``)."""
    threads: int = 0
    """Intra-op threads the timing pass ran with (0: unknown)."""
    single_thread_us: list[float] = field(default_factory=list)
    """Samples at ``torch.set_num_threads(1)``, each taken right after the matching sample of
    ``call_us`` (empty when only one thread was in use)."""
    page_faults: list[float] = field(default_factory=list)
    """Minor page faults per call, one value per timing sample (empty: not counted)."""
    page_fault_us: float = 0.0
    """The calibrated cost of one minor fault on the machine that ran the calls (0: not
    measured)."""
    wait_us: list[float] = field(default_factory=list)
    """Per timing sample, µs per call the calling thread waited for a CPU: runnable while
    another process held the core (empty: not measured). The causes share out the rest, the
    time the call ran."""
    single_wait_us: list[float] = field(default_factory=list)
    """The same for each sample of ``single_thread_us``."""
    cuda_memory: dict[str, Any] = field(default_factory=dict)
    """The CUDA allocator's numbers from the memory pass (see ``worker/cuda_memory.py``)."""
    line_us: dict[int, list[float]] = field(default_factory=dict)
    """Per source line, its exclusive CPU µs in each call of the line-marked copy run without
    the profiler (``worker/line_timing.py``); empty when not measured."""
    machine: Optional[Machine] = None
    """How busy the machine was during the job (None: not measured)."""
    unstable: str = ""
    """Why the timing cannot be trusted (the profiled and unprofiled passes disagreed twice,
    the samples spread too wide, or the heap's state decides the faults), one line ending in
    what to do; "" when stable."""
    rounds_added: int = 0
    """Of a two-sided job's interleaved rounds (``worker/ab_rounds.py``), how many were timed
    past the budget because the ratio of the two sides was not yet known to half the
    no-difference band (0 for a one-sided profile)."""


@dataclass
class ProfileResult(Message):
    """What the worker measured (``measured``) and the path of the exported trace."""

    TYPE: ClassVar[str] = "result"
    job_id: int
    trace_path: str
    measured: Measurements
    steps: int
    def_line: int = 0
    torch_version: str = ""
    attribution_note: str = ""  # why lines are not attributed ("" when they are)
    inputs: Inputs = field(default_factory=Inputs)  # the request's ``inputs``, echoed


def spread(values: list[float]) -> float:
    """Interquartile range over median of timing samples (0 for fewer than 2 or a 0 median):
    the noise figure the worker's timing pass stops on and the report's ``timing.spread``."""
    if len(values) < 2:
        return 0.0
    ordered = sorted(values)
    n = len(ordered)

    def quantile(q: float) -> float:  # linear interpolation (numpy's default)
        at = q * (n - 1)
        low = int(at)
        high = min(low + 1, n - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (at - low)

    middle = quantile(0.5)
    return (quantile(0.75) - quantile(0.25)) / middle if middle > 0 else 0.0


#: What the line of an unstable verdict ends with.
UNSTABLE_ADVICE = "rerun, or raise --timing-budget"

NO_DIFFERENCE_BAND = 0.05
"""B within ±5 % of A per call is *no difference* (``analysis/multi/interval.py`` decides; the
worker's interleaved rounds go on until the ratio is known to half of it): two back-to-back
unprofiled medians of the same function on a shared 2-core machine differ by up to ~3 %, and
the guide's ``fn`` at 1024×1024 measured within 1 % eager and compiled."""

WAIT_DROP = 0.2
"""An interleaved round in which one side's batch waited for a CPU (runnable while another
process held the core: ``worker/timing.py``) this share of its wall time more than the other
side's did is dropped from the A/B comparison (``analysis/multi/ab.py``), and the result says
how many were: load both halves of a round shared cancels in their ratio, load one half took
alone does not. (Dropping every round that waited at all left nothing to decide on a 2-core
machine shared with six other jobs: every round waited.)"""


def waited_apart(a_us: float, b_us: float, a_wait_us: float, b_wait_us: float) -> bool:
    """One side of a round waited for a CPU ``WAIT_DROP`` of its time more than the other."""
    return abs(a_wait_us / a_us - b_wait_us / b_us) >= WAIT_DROP


GLIBC_MMAP_MAX = 32 * 1024 * 1024
"""glibc's ceiling for its dynamic mmap threshold on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX``):
a block above it is mapped afresh (and faulted in) on every allocation, in every process; one
below it may be kept by the heap, by the process's history (``worker/heap_state.py``)."""

MIN_FAULTS_PER_CALL = 64
"""Fewer faults per call (256 KiB of fresh pages) are noise from the interpreter's own heap:
on a 10 µs call a single stray fault would otherwise count as 10 %. Below it the faults are no
``page-faults`` cause, no ``allocation-churn`` finding, and no heap probe
(``worker/heap_state.py``)."""

#: The profiled median must fall below the unprofiled one by more than this share (and below
#: its lower quartile) for the passes to disagree: a percent or two is cache and clock noise.
AGREE_SHARE = 0.05


def passes_disagree(unprofiled_us: list[float], profiled_us: list[float]) -> bool:
    """The profiled calls (profiler included) ran faster than the unprofiled ones beyond the
    noise: their median below the unprofiled samples' lower quartile and below their median by
    more than ``AGREE_SHARE``. The profiler only adds time, so one pass was slowed by something
    else (the worker measures once more; the report then calls the verdict unstable)."""
    if not unprofiled_us or not profiled_us:
        return False
    ordered = sorted(profiled_us)
    profiled = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
    unprofiled = sorted(unprofiled_us)
    middle = (unprofiled[(len(unprofiled) - 1) // 2] + unprofiled[len(unprofiled) // 2]) / 2
    lower = unprofiled[len(unprofiled) // 4]
    return profiled < min(lower, middle * (1 - AGREE_SHARE))


@dataclass
class JobError(Message):
    """A job failed in a way the user can fix; ``kind`` says which step failed."""

    TYPE: ClassVar[str] = "error"
    job_id: int
    kind: str  # "import" | "target" | "call-missing" | "call-invalid" | "call-raised" | "internal"
    # | "target-not-called" (the call ran, but never reached the target: ``worker/reach.py``)
    # | "capture" | "trace-write" (no room for the trace: ``worker/profiling.py``)
    message: str
    line: Optional[int] = None
    traceback: str = ""


@dataclass
class CompareRequest(JobRequest):
    """Profile the function eagerly and under ``torch.compile(mode=options.compile_mode)``.

    The eager side runs every pass of a ``ProfileRequest`` (its trace goes to ``trace_path``);
    the compiled side is warmed up (its first call, the compile, is timed on its own), timed in
    rounds interleaved with the eager calls, and profiled into ``compiled_trace_path``.
    """

    TYPE: ClassVar[str] = "compare"
    CLI_FLAG: ClassVar[str] = "--compare-compile"
    CLI_HELP: ClassVar[str] = "also run torch.compile(fn) in the same job and compare it with eager"
    CLI_ALIAS: ClassVar[tuple[str, str]] = (
        "--compiled",
        "profile torch.compile(fn): its kernels with the lines they came from and each line's "
        "compiled time beside eager (the --compare-compile job)",
    )
    compiled_trace_path: str = ""


@dataclass
class CompareResult(Message):
    """Both sides of a compile comparison.

    ``compiled`` is None when compiling or running the compiled function failed:
    ``compile_error`` then holds the compiler's own message and the eager side still stands.
    """

    TYPE: ClassVar[str] = "compare_result"
    job_id: int
    eager: ProfileResult
    compiled: Optional[ProfileResult] = None
    mode: str = "default"
    compile_s: Optional[float] = None
    compile_error: str = ""
    compile_error_kind: str = ""  # "compile-failed" | "compiled-call-raised"
    compile_traceback: str = ""
    recompiles: int = 0
    """Compilations Dynamo started during the timed calls (should be 0; the profiled pass
    compiles afresh on purpose, with kernel provenance: ``worker/kernel_provenance.py``)."""
    graph_breaks: list[str] = field(default_factory=list)
    """Dynamo's own reasons for each graph break (with counts), as it words them."""
    graph_code: dict[str, str] = field(default_factory=dict)
    """FX graph cache key (the hash in ``## Call CompiledFxGraph <key> ##``) → generated code."""
    kernel_sources: list[KernelSource] = field(default_factory=list)
    """Each kernel of the profiled compiled pass with its lines (issue 42)."""
    graph_break_sites: list[GraphBreakSite] = field(default_factory=list)
    """Each graph break Dynamo logged with its line."""
    provenance_note: str = ""
    """Why the compiled side has no per-line times ('' when it has them)."""


@dataclass
class KernelSource:
    """One compiled kernel and the lines of the profiled file it came from (Inductor's
    provenance; ``worker/kernel_provenance.py``)."""

    graph: str
    """FX graph cache key, as in ``## Call CompiledFxGraph <key> ##``."""
    kernel: str
    """``cpp_fused_mul_relu_sum_0``, ``triton_poi_fused_relu_0``, ``extern_kernels.mm``."""
    lines: list[int]
    ops: list[str]
    """The post-grad ops it fused (``relu``, ``mul``, ``sum``)."""
    extern: bool = False
    graph_id: int = -1
    """Inductor's graph id (``graph_<id>_`` in a CPU kernel's trace name): two graphs of one
    cache key (a graph break between two identical graphs) are told apart by it."""


@dataclass
class GraphBreakSite:
    """A graph break on its line, with Dynamo's reason."""

    file: str
    line: int
    reason: str = ""


@dataclass
class DiffRequest(JobRequest):
    """The function as it is on disk against an earlier version of its file, in one job.

    ``before_source`` is the earlier file's text (``git show REV:path``, or the source the
    editor kept from the last run); the worker loads it under a private module name so both
    versions coexist, evaluates the same call expression for each, times them in interleaved
    rounds and profiles both (the earlier side's trace goes to ``before_trace_path``). The
    options are ``JobOptions``' (``timing_budget_s`` is per side: the rounds take twice it).

    ``check_outputs`` (a measured fix, ``host/fix_run.py``: ``before_source`` is then the
    rewrite) first calls each side once from the same seed and compares what they return and
    the gradients they leave (``DiffResult.outputs``); a rewrite that raises fails the job
    with the kind ``rewrite-raised``; the profile passes are skipped (only the rounds count).
    """

    TYPE: ClassVar[str] = "diff"
    before_source: str = ""
    before_label: str = "HEAD"
    before_trace_path: str = ""
    check_outputs: bool = False
    # Issue 39 (a measured fix's checks, ``worker/trial_check.py``):
    check_dropout_off: bool = False
    """The rewrite draws its randomness differently (SDPA's fused dropout): the check runs
    both sides with every ``nn.Dropout`` at ``p=0``, and says so."""
    trial_conditions: list[dict[str, str]] = field(default_factory=list)
    """What the rewrite assumes that only the running program can tell, checked in the worker:
    ``{"kind": "lower-triangular", "class", "expr", "instead"}`` (a causal buffer; failing
    it, the job measures ``fallback_source`` instead) and ``{"kind": "no-grad"}`` (inference-mode's
    evidence: the call ran without grad, or every module in eval mode and no output
    requiring grad; failing it, the rewrite is refused)."""
    fallback_source: str = ""


@dataclass
class DiffResult(Message):
    """Both sides of a before/after comparison. Their ``measured.call_us`` are the interleaved
    rounds: index ``i`` of each is one round."""

    TYPE: ClassVar[str] = "diff_result"
    job_id: int
    before: ProfileResult
    after: ProfileResult
    before_label: str = "HEAD"
    outputs: dict[str, Any] = field(default_factory=dict)
    """With ``check_outputs``: ``same`` (bool), ``compared`` (how many tensors and numbers)
    and ``detail`` (the first difference, "" when the same); since issue 39 also ``refusal``
    (None or the trial's refusal id), ``checks`` and ``unchecked`` (lists of str), ``notes``
    (what the comparison did differently, e.g. dropout off) and ``fallback`` (when a trial
    condition failed and ``fallback_source`` was measured: what and why, e.g. ``measured with
    attn_mask: self.bias is not lower-triangular``)."""


#: A measured fix's check refusals (``DiffResult.outputs["refusal"]``), named for both sides:
#: the worker's check (``worker/trial_check.py``) and the trial (``source/fixes/trial.py``).
CHANGES_OUTPUTS = "changes the outputs"
CHANGES_AUTOGRAD = "changes autograd"
CHANGES_STATE = "changes the state"
NO_EVIDENCE = "no evidence"


def is_train_call(training: Optional[bool], grad_enabled: bool) -> bool:
    """A training call: grad enabled and, for a module's method, the module in ``.train()``
    (``training`` None: not a module's method). Every other call is an evaluation call."""
    return grad_enabled and training is not False


CALL_MAX_CHARS = 20_000
"""The longest call expression read (a real one is a line or two: build big inputs in a
helper function and call that)."""
CALL_MAX_DEPTH = 100
"""The deepest bracket nesting read in a call expression."""
_SIMPLER = "build the inputs in a helper function in the file and call that"


def _call_too_big(source: str) -> Optional[str]:
    """What makes ``source`` too big to parse safely, checked before it is parsed."""
    if len(source) > CALL_MAX_CHARS:
        return (
            f"call expression is {len(source):,} characters, over the {CALL_MAX_CHARS:,} read "
            f"— {_SIMPLER}"
        )
    depth = deepest = 0
    for char in source:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    if deepest > CALL_MAX_DEPTH:
        return f"call expression nests brackets {deepest} deep, over {CALL_MAX_DEPTH} — {_SIMPLER}"
    return None


def call_expression_problem(source: str) -> Optional[str]:
    """What is wrong with a call expression as text (None: it parses as one call). The host
    asks before it starts a worker, so a typo is told at once; the worker asks again."""
    import ast

    too_big = _call_too_big(source)
    if too_big is not None:
        return too_big
    try:
        tree = ast.parse(source.strip(), mode="eval")
        compile(tree, "<call>", "eval")  # the compiler recurses deeper than the parser
    except (RecursionError, MemoryError):
        return f"call expression is nested too deeply to compile — {_SIMPLER}"
    except SyntaxError as exc:
        return (
            f"call expression `{source}` is not valid Python: {exc.msg} — write a call such as "
            "fn(torch.randn(8, 8), w, b)"
        )
    if not isinstance(tree.body, ast.Call):
        return f"call expression `{source}` is not a call — write a call such as fn(x, w, b)"
    return None


@dataclass
class RunRequest(JobRequest):
    """Run a program (``entry_kind`` "script" | "module" | "pytest") in the worker and profile
    the targets on the arguments it really passes them (``worker/jobs/run.py``).

    ``targets``: the functions to profile (``RunTarget``). ``calls``: calls of a target after
    which it is profiled; the program is stopped once every target was, unless ``let_finish``.
    ``cwd``: the program's working directory (a launch configuration's ``cwd``); "" keeps the
    worker's own, the workspace root.
    """

    TYPE: ClassVar[str] = "run"
    entry_kind: str = "script"
    entry_target: str = ""
    entry_args: list[str] = field(default_factory=list)
    targets: list[RunTarget] = field(default_factory=list)
    calls: int = RunOptions.calls
    let_finish: bool = RunOptions.let_finish
    capture_limit: int = parse_size(RunOptions.capture_limit, floor=0)  # bytes
    cwd: str = ""
    mode: str = RunOptions.mode  # one of ``RUN_MODES``: which calls count towards ``calls``


@dataclass(frozen=True)
class RunTarget:
    """A function a ``RunRequest`` profiles in the running program."""

    file: str
    qualname: str
    trace_path: str
    capture_path: str = ""
    """Where ``--capture`` writes its arguments ("" for none)."""


@dataclass
class Capture:
    """A capture of a target's real arguments (``worker/captures.py``)."""

    path: str
    written: bool = False
    bytes: int = 0
    message: str = ""


@dataclass
class CallSeen:
    """One call of a ``RunTarget`` in the program: µs, its mode and the caller's place."""

    us: float = 0.0
    training: Optional[bool] = None  # the module's ``.training`` (None: not a module's method)
    grad_enabled: bool = True
    caller: str = ""
    faults: Optional[int] = None
    """Minor page faults of the process during the call (None: not counted)."""
    shapes: str = ""
    """The tensor arguments' shapes, ``[16, 1, 28, 28]`` each ("" when none): two calls of
    other shapes are other work (``host/run_numbers.py``)."""


@dataclass
class TargetReport:
    """What the running program did with one ``RunTarget``."""

    file: str
    qualname: str
    calls_seen: int = 0
    callers: list[tuple[str, int, int]] = field(default_factory=list)  # file, line, calls
    loaded: bool = False  # its file was imported
    cold_us: Optional[float] = None  # the program's first call, unprofiled
    in_run_us: list[float] = field(default_factory=list)  # the program's own calls, unprofiled
    calls: list[CallSeen] = field(default_factory=list)  # those timed calls
    other_calls: list[CallSeen] = field(default_factory=list)  # in another mode
    profile: Optional[ProfileResult] = None
    error: Optional[JobError] = None
    capture: Optional[Capture] = None


@dataclass
class RunResult(Message):
    """How the program ended and, per target (in ``RunRequest.targets``' order), what it did."""

    TYPE: ClassVar[str] = "run_result"
    job_id: int
    exit: str  # "stopped" | "finished" | "failed"
    exit_code: Optional[int] = None
    error: str = ""  # the program's uncaught exception, one line, or SystemExit's message
    traceback: str = ""  # that exception's traceback, the program's own frames only
    stderr_tail: list[str] = field(default_factory=list)
    test: Optional[str] = None  # pytest's outcome: "passed" | "failed" | …
    targets: list[TargetReport] = field(default_factory=list)


# -- the agent inside a running job (``torchscope/agent``, ``torchscope attach``) ------------


@dataclass
class AgentHello(Message):
    """Ask a job's agent what the job is (the reply is ``AgentInfo``)."""

    TYPE: ClassVar[str] = "agent_hello"


@dataclass
class AgentInfo(Message):
    """A running job, as its agent describes it: ``torchscope jobs`` lists these."""

    TYPE: ClassVar[str] = "agent_info"
    pid: int
    argv: list[str] = field(default_factory=list)
    cwd: str = ""
    ppid: int = 0  # the ranks of one torchrun share it (its elastic agent)
    python_version: str = ""
    started: float = 0.0  # the job's start, seconds since the epoch
    torch_version: Optional[str] = None  # None: the job has not imported torch
    device: str = "cpu"
    rank: Optional[int] = None  # under torch.distributed (torchrun's RANK)
    world_size: Optional[int] = None
    functions: list[str] = field(default_factory=list)  # FILE::QUALNAME under the job's cwd
    patched: list[str] = field(default_factory=list)  # targets wrapped right now
    agent_threads: int = 0  # the agent's threads alive, this connection's included
    protocol_version: int = PROTOCOL_VERSION


@dataclass
class AttachRequest(Message):
    """Profile the job's own next calls of ``file::qualname`` (``calls`` timed unprofiled,
    then ``calls`` profiled), or with ``steps`` > 0 its next optimizer steps; the trace goes to
    ``trace_path``. ``timeout_s`` bounds the wait for the calls."""

    TYPE: ClassVar[str] = "attach"
    job_id: int
    trace_path: str
    file: str = ""
    qualname: str = ""
    calls: int = 5
    steps: int = 0
    timeout_s: float = 300.0


@dataclass
class CancelAttach(Message):
    """Stop the attach in progress at once and restore everything."""

    TYPE: ClassVar[str] = "cancel"


@dataclass
class AttachResult(Message):
    """What the agent measured on the job's own calls: the profile (``trace_path``,
    ``measured``) and each call timed (``calls``) and profiled (``profiled``)."""

    TYPE: ClassVar[str] = "attach_result"
    job_id: int
    pid: int
    profile: ProfileResult
    calls: list[CallSeen] = field(default_factory=list)
    profiled: list[CallSeen] = field(default_factory=list)


@dataclass
class Shutdown(Message):
    """Ask the worker to exit cleanly."""

    TYPE: ClassVar[str] = "shutdown"


JOB_KINDS: dict[str, type[JobRequest]] = {
    cls.TYPE: cls for cls in (ProfileRequest, CompareRequest, DiffRequest, RunRequest)
}
"""Job kind → its request type. The worker serves each kind with one module under
``worker/jobs/``; a sweep is not a kind (``host/sweep.py`` runs one profile job per size)."""

MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.TYPE: cls
    for cls in (
        Hello,
        ProfileRequest,
        Progress,
        Output,
        ProfileResult,
        JobError,
        CompareRequest,
        CompareResult,
        DiffRequest,
        DiffResult,
        RunRequest,
        RunResult,
        Shutdown,
        AgentHello,
        AgentInfo,
        AttachRequest,
        CancelAttach,
        AttachResult,
    )
}


def encode(message: Message) -> bytes:
    """Serialise a message into one length-prefixed frame."""
    payload = to_builtins(message, finite=False)
    payload["type"] = message.TYPE
    import msgpack  # here, not at the top: ``torchscope analyze`` imports this module for its
    # constants and never frames a message (msgpack and the datetime it imports: ~3 ms)

    body = msgpack.packb(payload, use_bin_type=True)
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    return _HEADER.pack(len(body)) + body


def decode(body: bytes) -> Message:
    """Turn one frame body (without its length prefix) back into its dataclass."""
    import msgpack

    try:
        payload = msgpack.unpackb(body, raw=False)
    except Exception as exc:  # msgpack raises several unrelated types
        raise ProtocolError(f"frame is not valid msgpack: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise ProtocolError("frame is not a message map with a 'type'")
    cls = MESSAGE_TYPES.get(payload.pop("type"))
    if cls is None:
        raise ProtocolError("frame has an unknown message type")
    return from_builtins(cls, payload)


class FrameDecoder:
    """Incremental decoder: feed it chunks as they arrive, get whole messages out.

    Handles frames split across reads and several frames in one read.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_frame_bytes

    def feed(self, chunk: bytes) -> list[Message]:
        self._buffer.extend(chunk)
        messages: list[Message] = []
        while len(self._buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(self._buffer)
            if length > self._max:
                raise ProtocolError(
                    f"frame of {length} bytes exceeds the {self._max}-byte limit "
                    "(is something else writing to the protocol pipe?)"
                )
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            messages.append(decode(body))
        return messages

    @property
    def pending(self) -> int:
        """Bytes received that do not form a whole frame yet."""
        return len(self._buffer)


# -- this machine: one name for its CPU and where its calibration lives ----------------------
# The worker writes the calibration (``worker/calibrate.py``); the analysis of a trace recorded
# on this machine reads it (``analysis/measure/machine.py``). Both name the CPU with
# ``cpu_name``, so ``profile``, ``calibrate`` and ``analyze`` say the same thing.

CALIBRATION_FILE = "calibration.json"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/torchscope``, else ``~/.cache/torchscope``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchscope"


def cpu_name() -> str:
    """This machine's CPU model (``/proc/cpuinfo``'s ``model name``; else what ``platform``
    knows)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def machine_id() -> str:
    """``host/CPU model``: the first part of every calibration key."""
    return f"{host_name()}/{cpu_name()}"


def host_name() -> str:
    """This machine's network name, as ``torch.profiler`` writes it (``host_name``)."""
    return platform.node() or "host"
