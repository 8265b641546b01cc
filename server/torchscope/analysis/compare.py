"""Eager vs ``torch.compile``, side by side: per-call numbers, changed ops, copies, a verdict.

The guide's lesson: measure ``torch.compile``, don't assume it helps. At 64×64 its ``fn``
compiled to one ``aten::addmm`` (instead of ``aten::mm`` + ``aten::add``) plus a copy of the
bias into the output, and each call cost *more* than eager (Dynamo's guard check and the AOT
wrapper cost more than the fusion saved). Inputs are the two analysed reports, an
:class:`Inventory` of each trace (which ops ran, inside which op, and the copies), and what
the worker measured about the compile itself (:class:`CompileMeta`). Pure Python, like the rest
of ``analysis``.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from .columns import median
from .context import build_context
from .formatting import format_bytes, format_duration, format_share
from .link import copy_kind
from .model import Trace
from .report import Finding, Report, _clean

NO_DIFFERENCE_BAND = 0.05
"""Compiled within ±5 % of eager per call is *no difference*: two back-to-back unprofiled
medians of the same function on a shared 2-core machine differ by up to ~3 %, and the guide's
``fn`` at 1024×1024 measured within 1 % (the GEMM is the same either way). When the paired
rounds of one comparison scatter more than that, the band widens to their measured noise
(see :func:`measured_noise`): a difference inside the noise is not a difference."""

ATEN_PREFIXES = ("aten::", "prims::", "inductor::", "quantized::")
"""Ops that do the work (as opposed to compile-machinery annotations and wrappers)."""

TRIVIAL_OPS = frozenset(
    {
        "aten::resolve_conj",
        "aten::resolve_neg",
        "aten::view",
        "aten::_reshape_alias",
        "aten::reshape",
        "aten::as_strided",
        "aten::t",
        "aten::transpose",
        "aten::expand",
        "aten::unsqueeze",
        "aten::squeeze",
        "aten::detach",
        "aten::alias",
        "aten::lift_fresh",
        "aten::_unsafe_view",
        "aten::empty",
        "aten::empty_strided",
        "aten::empty_like",
    }
)
"""Metadata-only ops (no bytes move): listed in ``ops`` but left out of the change summary."""

COPY_OPS = frozenset({"aten::copy_"})
"""The op that moves the bytes; ``clone``/``_to_copy``/``contiguous`` reach it underneath."""

COPY_WRAPPERS = frozenset(
    {"aten::copy_", "aten::clone", "aten::_to_copy", "aten::to", "aten::contiguous"}
)
"""Skipped when naming the op a copy happens *in*: the reason is the op above them."""

BIAS_OPS = frozenset({"aten::addmm", "aten::addmv", "aten::baddbmm", "aten::addbmm"})
"""GEMMs with an epilogue that first copies ``self`` (the bias) into the output."""

DTYPE_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
}
"""``Input type`` strings as Kineto writes them → bytes per element."""

VERDICTS = ("keep-eager", "compile-wins", "no-difference")

_GRAPH = re.compile(r"CompiledFxGraph (\w+)")
_REGION = re.compile(r"Torch-Compiled Region: (\d+/\d+)")


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


@dataclass
class Inventory:
    """What one trace's steps ran, per call: ops, copies, compiled graphs."""

    steps: int
    ops: list[OpRow] = field(default_factory=list)
    copies: list[CopyRow] = field(default_factory=list)
    graphs: list[str] = field(default_factory=list)
    """``CompiledFxGraph`` cache keys called in the steps."""
    compile_ids: list[str] = field(default_factory=list)
    """``Torch-Compiled Region: F/C`` ids: C > 0 means frame F was recompiled."""

    def counts(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for row in self.ops:
            out[row.name] = out.get(row.name, 0.0) + row.calls
        return out


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
    paired_ratios: list[float] = field(default_factory=list)


def _is_work(name: str) -> bool:
    return name.startswith(ATEN_PREFIXES)


def _tensor_bytes(args: Any, index: int) -> float:
    """Bytes of input ``index`` from ``Input Dims`` × ``Input type`` (0 when unknown)."""
    dims = args.get("Input Dims") if hasattr(args, "get") else None
    types = args.get("Input type") if hasattr(args, "get") else None
    if not isinstance(dims, list) or not isinstance(types, list) or len(dims) <= index:
        return 0.0
    shape, dtype = dims[index], types[index] if len(types) > index else None
    size = DTYPE_BYTES.get(dtype) if isinstance(dtype, str) else None
    if not isinstance(shape, list) or size is None:
        return 0.0
    return float(math.prod(int(d) for d in shape if isinstance(d, (int, float))) * size)


class _PerStep:
    """Per key, per step sums of a few numbers; read back as medians over the steps (one odd
    step — a recompile, a load spike — must not move a per-call number)."""

    def __init__(self, steps: int, width: int) -> None:
        self.steps = max(1, steps)
        self.width = width
        self.sums: dict[Any, list[list[float]]] = {}

    def add(self, key: Any, step: int, *values: float) -> None:
        rows = self.sums.get(key)
        if rows is None:
            rows = self.sums[key] = [[0.0] * self.width for _ in range(self.steps)]
        row = rows[min(max(step, 0), self.steps - 1)]
        for k, v in enumerate(values):
            row[k] += v

    def medians(self, key: Any) -> list[float]:
        rows = self.sums[key]
        return [median([r[k] for r in rows]) for k in range(self.width)]


def inventory(trace: Trace) -> Inventory:
    """Ops, copies and compiled graphs of the trace's steps, per call (medians over steps).

    Copies are the device memcpys (kind and bytes from the events) when the trace has device
    activity, else the host ``aten::copy_`` ops (bytes from ``record_shapes``' dims × dtype);
    either way each names the op it happened in (``aten::addmm`` for the bias copy).
    """
    ctx = build_context(trace, None)
    n = len(ctx.steps)
    ops = trace.ops
    parent = ctx.nest.op_parent

    def within(i: int, skip: frozenset[str] = frozenset()) -> Optional[str]:
        p = parent[i]
        while p >= 0 and (not _is_work(ops[p].name) or ops[p].name in skip):
            p = parent[p]
        return ops[p].name if p >= 0 else None

    op_sums = _PerStep(n, 2)
    parents: dict[str, dict[Optional[str], int]] = {}
    host_copies = _PerStep(n, 3)
    compile_ids: set[str] = set()
    graphs: list[str] = []
    for i, op in enumerate(ops):
        step = ctx.step_of_op[i]
        if step < 0:
            continue
        name = op.name
        if not _is_work(name):
            region = _REGION.search(name)
            if region:
                compile_ids.add(region.group(1))
            graph = _GRAPH.search(name)
            if graph and graph.group(1) not in graphs:
                graphs.append(graph.group(1))
            continue
        op_sums.add(name, step, 1.0, ctx.nest.op_self[i])
        host = within(i)
        parents.setdefault(name, {})
        parents[name][host] = parents[name].get(host, 0) + 1
        if name in COPY_OPS and not trace.has_device_activity:
            key = (name, within(i, COPY_WRAPPERS))
            host_copies.add(key, step, 1.0, _tensor_bytes(op.args, 0), ctx.nest.op_self[i])
    for k, ann in enumerate(trace.annotations):
        graph = _GRAPH.search(ann.name)
        if graph and ctx.step_of_ann[k] >= 0 and graph.group(1) not in graphs:
            graphs.append(graph.group(1))

    rows = []
    for name in op_sums.sums:  # in order of first call
        calls, self_us = op_sums.medians(name)
        where = max(parents[name], key=lambda p: parents[name][p])
        rows.append(OpRow(name=name, calls=calls, self_cpu_us=self_us, within=where))
    copies = []
    for name, where in host_copies.sums:
        count, nbytes, us = host_copies.medians((name, where))
        copies.append(CopyRow("cpu", name, where, count, nbytes, us))
    copies += _device_copies(ctx, n, within)
    return Inventory(
        steps=n,
        ops=rows,
        copies=copies,
        graphs=graphs,
        compile_ids=sorted(compile_ids),
    )


def _device_copies(ctx: Any, n: int, within: Any) -> list[CopyRow]:
    trace = ctx.trace
    groups = _PerStep(n, 3)
    for m, copy in enumerate(trace.memcpys):
        step = ctx.step_of_memcpy[m]
        if step < 0:
            continue
        r = ctx.links.memcpy_rt[m]
        op = ctx.nest.rt_op[r] if r >= 0 else -1
        name = trace.ops[op].name if op >= 0 else (trace.runtime[r].name if r >= 0 else "?")
        where = None
        if op >= 0:
            where = name if name not in COPY_WRAPPERS else within(op, COPY_WRAPPERS)
        nbytes = copy.args.get("bytes")
        size = float(nbytes) if isinstance(nbytes, (int, float)) else 0.0
        groups.add((copy_kind(copy.name), name, where), step, 1.0, size, copy.end - copy.start)
    out = []
    for key in groups.sums:
        count, nbytes, us = groups.medians(key)
        out.append(CopyRow(key[0], key[1], key[2], count, nbytes, us))
    return out


def measured_noise(paired_ratios: list[float]) -> float:
    """How far the median compiled/eager ratio could be off, relative to it (0 with fewer than
    4 rounds). The larger of two estimates:

    - the ~95 % half-width of its confidence interval, 2 × 1.25 σ / √n, with σ estimated from
      the per-round ratios' interquartile range (σ ≈ IQR / 1.35), so a few disturbed rounds do
      not inflate it;
    - how much the first and the second half of the rounds disagree: load on a shared machine
      comes in bursts longer than a round, which the first estimate, assuming independent
      rounds, misses.
    """
    ratios = [r for r in paired_ratios if r > 0 and math.isfinite(r)]
    if len(ratios) < 4:
        return 0.0
    ordered = sorted(ratios)
    q1, _, q3 = statistics.quantiles(ordered, n=4)
    mid = statistics.median(ordered)
    if mid <= 0:
        return 0.0
    sigma = (q3 - q1) / 1.349
    spread = 2 * 1.2533 * sigma / math.sqrt(len(ratios)) / mid
    half = len(ratios) // 2
    halves = abs(statistics.median(ratios[:half]) - statistics.median(ratios[half:])) / mid
    return max(spread, halves)


def _side(report: Report, inv: Inventory) -> dict[str, Any]:
    steps = report.steps
    timing = report.timing
    copies = [asdict(c) for c in inv.copies]
    return {
        "median_us": timing.median_us if timing else None,
        "min_us": timing.min_us if timing else None,
        "max_us": timing.max_us if timing else None,
        "cold_us": timing.cold_us if timing else None,
        "calls_timed": timing.calls if timing else 0,
        "cpu_us": median([s.cpu_op_us for s in steps]),
        "profiled_us": median([s.wall_us for s in steps]),
        "device_us": median([s.device_time_us for s in steps]),
        "launches": median([float(s.launches) for s in steps]),
        "copies": copies,
        "copy_count": sum(c.calls for c in inv.copies),
        "copy_bytes": sum(c.bytes for c in inv.copies),
        "op_count": sum(r.calls for r in inv.ops),
        "ops": [asdict(r) for r in inv.ops],
        "verdict": {"id": report.verdict.id, "headline": report.verdict.headline},
    }


def op_changes(eager: Inventory, compiled: Inventory) -> dict[str, Any]:
    """Which ops the compiled run dispatches more or less often than eager (per call)."""
    before, after = eager.counts(), compiled.counts()
    removed: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []
    for name in [*before, *(k for k in after if k not in before)]:
        b, a = before.get(name, 0.0), after.get(name, 0.0)
        if abs(a - b) < 1e-9:
            continue
        row = {"name": name, "eager": b, "compiled": a}
        (removed if a < b else added).append(row)
    shown_removed = [r["name"] for r in removed if r["name"] not in TRIVIAL_OPS]
    shown_added = [r["name"] for r in added if r["name"] not in TRIVIAL_OPS]
    summary = ""
    if shown_removed or shown_added:
        summary = (
            f"{' + '.join(shown_removed) or '(nothing)'} → {' + '.join(shown_added) or '(nothing)'}"
        )
    return {"removed": removed, "added": added, "summary": summary}


def added_copies(eager: Inventory, compiled: Inventory) -> list[CopyRow]:
    """Compiled copies with no eager counterpart (same kind, same enclosing op), or more bytes."""
    base: dict[tuple[str, Optional[str]], float] = {}
    for c in eager.copies:
        base[(c.kind, c.within)] = base.get((c.kind, c.within), 0.0) + c.bytes
    out = []
    for c in compiled.copies:
        if c.bytes > base.get((c.kind, c.within), 0.0) or (
            c.bytes == 0 and (c.kind, c.within) not in base
        ):
            out.append(c)
    return out


def _copy_phrase(copies: list[CopyRow]) -> str:
    """``a 16.0 KiB bias copy`` / ``2 copies (32.0 KiB)``; '' for none."""
    if not copies:
        return ""
    total = sum(c.bytes for c in copies)
    count = sum(c.calls for c in copies)
    size = f"{format_bytes(total)} " if total else ""
    if len(copies) == 1 and round(count) == 1:
        what = "bias copy" if copies[0].is_bias_copy else "copy"
        kind = f" ({copies[0].kind})" if copies[0].kind != "cpu" else ""
        return f"a {size}{what}{kind}"
    return f"{count:g} copies ({format_bytes(total)})"


def _factor(ratio: float) -> str:
    """How much slower (ratio > 1) or faster: ``3.4×`` from 1.5 on, percent below."""
    big = ratio if ratio >= 1 else 1 / ratio
    return f"{big:.1f}×" if big >= 1.5 else f"{(big - 1) * 100:.0f} %"


def _band_phrase(band: float) -> str:
    if band <= NO_DIFFERENCE_BAND + 1e-12:
        return f"within ±{format_share(band)}"
    return f"within the measured noise of ±{format_share(band)}"


def decide(
    eager_us: float, compiled_us: float, band: float, copies: list[CopyRow], compile_s: float
) -> dict[str, Any]:
    """``keep-eager`` / ``compile-wins`` / ``no-difference`` with its headline."""
    ratio = compiled_us / eager_us if eager_us > 0 else math.inf
    times = f"{format_duration(eager_us)} → {format_duration(compiled_us)}"
    copy = _copy_phrase(copies)
    adds = f", adds {copy}" if copy else ""
    compile_cost = f"the {format_duration(compile_s * 1e6)} compile" if compile_s else "compiling"
    within_band = 0 < ratio < math.inf and abs(math.log(ratio)) <= math.log1p(band)
    if within_band:
        vid = "no-difference"
        headline = (
            f"torch.compile: no difference per call ({times}, {_band_phrase(band)})"
            f"{adds}; keep eager — {compile_cost} buys nothing"
        )
    elif ratio > 1:
        vid = "keep-eager"
        headline = f"torch.compile: {_factor(ratio)} slower per call ({times}){adds}; keep eager"
    else:
        vid = "compile-wins"
        headline = (
            f"torch.compile: {_factor(ratio)} faster per call ({times}){adds}; compile wins "
            f"(after {compile_cost})"
        )
    return {"id": vid, "headline": headline, "ratio": ratio, "band": band}


def _finding(
    rule: str, severity: str, message: str, cost: float, file: Optional[str], line: Optional[int]
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        message=message,
        cost_us=cost,
        line=line,
        file=file,
        title={
            "compile-tax": "torch.compile costs more per call than eager",
            "hidden-copy": "A copy torch.compile added",
            "recompile": "torch.compile recompiled during the measured calls",
            "graph-break": "torch.compile split the function at graph breaks",
        }.get(rule, rule),
    )


def short_reason(reason: str) -> str:
    """Dynamo's graph-break reason in one line: its first line, plus its ``Explanation:``
    line when it has one (torch ≥ 2.7 words reasons as a title, an explanation and hints)."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    if not lines:
        return reason
    explanation = next((line for line in lines[1:] if line.startswith("Explanation:")), None)
    if explanation:
        return f"{lines[0]}: {explanation.removeprefix('Explanation:').strip()}"
    return lines[0]


def compare_findings(
    eager: dict[str, Any],
    compiled: dict[str, Any],
    compiled_report: Report,
    copies: list[CopyRow],
    meta: CompileMeta,
    verdict: dict[str, Any],
    file: Optional[str],
    line: Optional[int],
) -> list[Finding]:
    out: list[Finding] = []
    e, c = eager["median_us"] or 0.0, compiled["median_us"] or 0.0
    if verdict["id"] == "keep-eager":
        wrapper = next((f for f in compiled_report.findings if f.rule == "compile-tax"), None)
        why = (
            f"; its wrapper (Dynamo's guard check, the AOT runtime wrapper) alone takes "
            f"{format_duration(wrapper.cost_us)} of CPU per profiled call"
            if wrapper
            else ""
        )
        graphs = compiled.get("graphs", [])
        code = ""
        if graphs and graphs[0].get("code_path"):
            code = f"; generated code: {graphs[0]['code_path']}"
        out.append(
            _finding(
                "compile-tax",
                "warning",
                f"torch.compile costs {format_duration(c - e)} more per call than eager "
                f"({format_duration(e)} → {format_duration(c)}, unprofiled){why}: at this size "
                f"the fixed per-call cost outweighs what the fused code saves{code}",
                c - e,
                file,
                line,
            )
        )
    for copy in copies:
        what = "bias copy" if copy.is_bias_copy else "copy"
        where = f" inside {copy.within}" if copy.within else ""
        size = format_bytes(copy.bytes) if copy.bytes else "unknown bytes"
        epilogue = (
            f" ({copy.within} first copies the bias into its output, then runs the GEMM)"
            if copy.is_bias_copy
            else ""
        )
        kind = "host" if copy.kind == "cpu" else copy.kind
        out.append(
            _finding(
                "hidden-copy",
                "information",
                f"torch.compile adds a {size} {kind} {what} per call: {copy.op}{where}"
                f"{epilogue}; eager does not copy here",
                copy.time_us,
                file,
                line,
            )
        )
    if meta.recompiles > 0:
        out.append(
            _finding(
                "recompile",
                "warning",
                f"torch.compile recompiled {meta.recompiles}× during the measured calls: a guard "
                "failed on something that changes between calls (a Python scalar, a shape, a "
                "global); the compiled numbers include those compiles — run with "
                "TORCH_LOGS=recompiles to see which guard",
                0.0,
                file,
                line,
            )
        )
    if meta.graph_breaks:
        reasons = "; ".join(short_reason(r) for r in meta.graph_breaks[:3])
        more = f" (+{len(meta.graph_breaks) - 3} more)" if len(meta.graph_breaks) > 3 else ""
        out.append(
            _finding(
                "graph-break",
                "information",
                f"torch.compile split the function at {len(meta.graph_breaks)} graph break "
                f"reason(s); the code between graphs runs eagerly: {reasons}{more}",
                0.0,
                file,
                line,
            )
        )
    return out


def compare_runs(
    eager_report: Report,
    eager_inv: Inventory,
    compiled_report: Optional[Report],
    compiled_inv: Optional[Inventory],
    meta: CompileMeta,
    file: Optional[str] = None,
    line: Optional[int] = None,
) -> dict[str, Any]:
    """The ``compare`` object of ``profile --compare-compile --json``."""
    eager = _side(eager_report, eager_inv)
    out: dict[str, Any] = {
        "mode": meta.mode,
        "eager": eager,
        "compiled": None,
        "changes": None,
        "verdict": None,
        "findings": [],
        "error": None,
    }
    if compiled_report is None or compiled_inv is None:
        out["error"] = {
            "kind": meta.error_kind or "compile-failed",
            "message": meta.error or "torch.compile did not produce a compiled run",
        }
        if meta.graph_breaks:
            out["graph_breaks"] = list(meta.graph_breaks)
        return _clean(out)  # type: ignore[no-any-return]
    compiled = _side(compiled_report, compiled_inv)
    hashes = compiled_inv.graphs or sorted(meta.graph_code)
    compiled.update(
        {
            "compile_s": meta.compile_s,
            "graphs": [{"hash": h, "code_path": meta.graph_code.get(h)} for h in hashes],
            "recompiles": meta.recompiles,
            "compile_ids": compiled_inv.compile_ids,
            "graph_breaks": list(meta.graph_breaks),
        }
    )
    copies = added_copies(eager_inv, compiled_inv)
    noise = measured_noise(meta.paired_ratios)
    verdict = decide(
        eager["median_us"] or 0.0,
        compiled["median_us"] or 0.0,
        max(NO_DIFFERENCE_BAND, noise),
        copies,
        meta.compile_s or 0.0,
    )
    verdict["noise"] = noise
    out.update(
        {
            "compiled": compiled,
            "changes": op_changes(eager_inv, compiled_inv),
            "verdict": verdict,
            "findings": [
                asdict(f)
                for f in compare_findings(
                    eager, compiled, compiled_report, copies, meta, verdict, file, line
                )
            ],
        }
    )
    return _clean(out)  # type: ignore[no-any-return]


# -- text ------------------------------------------------------------------------------------


def _copies_cell(side: dict[str, Any]) -> str:
    copies = side.get("copies") or []
    if not copies:
        return "none"
    parts = []
    for c in copies:
        where = f" in {c['within']}" if c.get("within") else ""
        parts.append(f"{c['calls']:g}× {format_bytes(c['bytes'])} {c['kind']}{where}")
    return "; ".join(parts)


def _us(value: Any) -> str:
    return format_duration(float(value)) if isinstance(value, (int, float)) else "—"


def render_comparison(compare: dict[str, Any]) -> str:
    """The comparison as terminal text (from the JSON object, so CLI and editor agree)."""
    eager, compiled = compare["eager"], compare.get("compiled")
    lines = [f"torch.compile (mode={compare.get('mode', 'default')}) vs eager:"]
    error = compare.get("error")
    if compiled is None:
        message = error["message"] if error else "no compiled run"
        lines.append(f"  torch.compile failed — the eager profile above stands.\n  {message}")
        return "\n".join(lines)
    rows = [
        ("", "eager", "compiled"),
        (
            "time per call (unprofiled)",
            _us(eager["median_us"]),
            _us(compiled["median_us"]),
        ),
        (
            "  min … max",
            f"{_us(eager['min_us'])} … {_us(eager['max_us'])}",
            f"{_us(compiled['min_us'])} … {_us(compiled['max_us'])}",
        ),
        ("CPU op time per call (profiled)", _us(eager["cpu_us"]), _us(compiled["cpu_us"])),
        ("device time per call", _us(eager["device_us"]), _us(compiled["device_us"])),
        ("kernel launches per call", f"{eager['launches']:g}", f"{compiled['launches']:g}"),
        ("copies per call", _copies_cell(eager), _copies_cell(compiled)),
        ("ops per call", f"{eager['op_count']:g}", f"{compiled['op_count']:g}"),
        ("first call", _us(eager["cold_us"]), f"{_us(compiled['cold_us'])} (compile)"),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        lines.append(
            "  "
            + r[0].ljust(widths[0])
            + "  "
            + r[1].rjust(widths[1])
            + "  "
            + r[2].rjust(widths[2])
        )
    changes = compare.get("changes") or {}
    if changes.get("summary"):
        lines.append(f"  ops changed: {changes['summary']}")
    for graph in compiled.get("graphs", []):
        where = graph.get("code_path") or "(generated code not found on disk)"
        lines.append(f"  CompiledFxGraph {graph['hash'][:12]}…: {where}")
    if compiled.get("recompiles"):
        lines.append(f"  recompiles during the measured calls: {compiled['recompiles']}")
    if compiled.get("trace_path"):
        lines.append(f"  compiled trace: {compiled['trace_path']}")
    verdict = compare.get("verdict")
    if verdict:
        lines.append(f"verdict: {verdict['headline']}")
    for f in compare.get("findings", []):
        lines.append(f"  [{f['rule']}] {f['message']}")
    return "\n".join(lines)
