"""An oracle for a CPU verdict, computed without torchscope's analysis (issue 55).

For one call (a ``# torchscope:`` directive of the family corpus, evaluated once), measure:

- ``t1``, ``t2``: the median wall time per call by ``torch.utils.benchmark.Timer`` at
  ``num_threads=1`` and ``2`` (``blocked_autorange``, interleaved rounds), and ``cpu1``: the
  same at one thread timed by the calling thread's CPU clock (``timer=time.thread_time``: at
  one intra-op thread the work runs on the calling thread, and the time another process held
  the core is left out, as the verdict's causes leave out ``wait_us``). The noise of each is
  the larger relative spread (IQR / median) of its rounds and how far their medians differ;
- ``flops``: the call's FLOPs by ``torch.utils.flop_counter.FlopCounterMode`` (GEMMs,
  convolutions, attention, and their backward ops);
- ``peak``: this machine's measured matmul peak at the thread count judged: the same figure
  torchscope holds its efficiency to (``worker/calibrate.peaks``, its cache or measured now);
- ``ops``: the aten ops one call dispatches (a ``TorchDispatchMode`` that counts them), and
  ``floor``: the cost of dispatching one tiny op (``Timer`` of an in-place add on one
  element, on the thread's CPU clock), so ``ops × floor`` is what the call would cost if every op did nothing.

From these, at the thread count ``n`` the verdict was taken at (``t = cpu1`` at one thread,
``t2`` at two):

- **threads** (``n > 1``): the call at ``n`` threads is slower than at one thread by more than
  the noise (``t_n > t1 × (1 + max(THREADS_MARGIN, 2 × noise))``): its intra-op threads cost
  more than they give.
- **compute**: ``efficiency = flops / (t × peak) ≥ COMPUTE_FLOOR + MARGIN``; ``COMPUTE_FLOOR``
  is the 30 % line torchscope draws against a measured peak (``verdict/causes.COMPUTE_FLOOR``),
  so the two answer the same question: does the math at this machine's best rate explain at
  least 30 % of the call?
- **overhead**: ``ops × floor ≥ DISPATCH_SHARE × t`` (the call is mostly the fixed cost of
  its ops), or the efficiency is below ``COMPUTE_FLOOR − MARGIN`` (not compute-bound: the time
  is fixed costs of small ops, bytes or slow math — ``overhead`` or ``other``).
- Between ``COMPUTE_FLOOR ± MARGIN`` the oracle cannot tell compute from the rest within the
  machine's noise: either answer agrees. Each bound is widened by the measured noise (the
  efficiency divided or multiplied by ``1 + noise``): the verdict's own timing is taken a few
  seconds apart on a machine whose load moves, and a noisy oracle decides less.

The verdict's class (:func:`verdict_class`): ``threads`` for its ``threads`` cause,
``compute`` for ``compute-bound``, ``overhead`` for any other ``overhead-bound``, ``other``
for ``memory-bound``, ``low-efficiency`` and ``compute-heavy``. The oracle is **unstable**
when its own noise exceeds ``NOISE``: then a verdict that disagrees must say ``stable: false``.
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPUTE_FLOOR = 0.30
"""torchscope's line against a measured CPU peak (``verdict/causes.COMPUTE_FLOOR``)."""
MARGIN = 0.10
"""Either side of ``COMPUTE_FLOOR``: a shared 2-core machine's timings move ±30 %, so an
efficiency of 0.27 one minute is 0.35 the next."""
DISPATCH_SHARE = 0.5
THREADS_MARGIN = 0.15
NOISE = 0.20
ROUNDS = 2
MIN_RUN_S = 0.2


@dataclass(frozen=True)
class Oracle:
    t1_us: float
    t2_us: float
    cpu1_us: float
    noise1: float
    noise2: float
    flops: float
    peak_gflops: float
    ops: int
    floor_us: float
    threads: int

    @property
    def t_us(self) -> float:
        return self.cpu1_us if self.threads == 1 else self.t2_us

    @property
    def efficiency(self) -> float:
        return self.flops / (self.t_us * 1e-6) / (self.peak_gflops * 1e9)

    @property
    def dispatch_share(self) -> float:
        return self.ops * self.floor_us / self.t_us

    @property
    def noise(self) -> float:
        """The relative noise of the time the classes are judged on (``cpu1`` or ``t2``)."""
        return self.noise1 if self.threads == 1 else max(self.noise1, self.noise2)

    @property
    def stable(self) -> bool:
        return self.noise <= NOISE

    def classes(self) -> frozenset[str]:
        """The verdict classes that agree with what was measured."""
        if self.threads > 1 and self.t2_us > self.t1_us * (1 + max(THREADS_MARGIN, 2 * self.noise)):
            return frozenset({"threads"})
        widen = 1 + self.noise  # the efficiency is known to within the timings' noise
        if self.efficiency / widen >= COMPUTE_FLOOR + MARGIN:
            return frozenset({"compute"})
        if self.dispatch_share / widen >= DISPATCH_SHARE:
            return frozenset({"overhead"})
        if self.efficiency * widen < COMPUTE_FLOOR - MARGIN:
            return frozenset({"overhead", "other"})
        return frozenset({"compute", "overhead", "other"})

    def label(self) -> str:
        """``compute (eff 45 %, dispatch 3 %, 1t 4.1 ms, 2t 2.3 ms)``."""
        names = "|".join(sorted(self.classes()))
        return (
            f"{names} (eff {self.efficiency:.0%}, dispatch {self.dispatch_share:.0%}, "
            f"1t {self.t1_us / 1e3:.2f} ms (CPU {self.cpu1_us / 1e3:.2f} ms), "
            f"2t {self.t2_us / 1e3:.2f} ms, "
            f"noise {self.noise:.0%})"
        )


def verdict_class(verdict: dict[str, Any]) -> str:
    """A report's verdict as one of the oracle's classes."""
    if verdict["cause"] == "threads":
        return "threads"
    if verdict["id"] == "compute-bound":
        return "compute"
    if verdict["id"] == "overhead-bound":
        return "overhead"
    return "other"


def agrees(oracle: Oracle, verdict: dict[str, Any]) -> bool:
    """The verdict's class is one the oracle allows, or the oracle is unstable and the verdict
    says so too."""
    if verdict_class(verdict) in oracle.classes():
        return True
    return not oracle.stable and not verdict["stable"]


def load(path: Path, name: str) -> Any:
    """The corpus file imported as a module of its own (``__name__ != "__main__"``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _op_count(call: Any) -> int:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            Count.ops += 1
            return func(*args, **(kwargs or {}))

    with Count():
        call()
    return Count.ops


def _flops(call: Any) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        call()
    return float(counter.get_total_flops())


def _timer_us(call: Any, threads: int, cpu: bool = False) -> tuple[float, float]:
    from torch.utils.benchmark import Timer

    clock = time.thread_time if cpu else time.perf_counter
    timer = Timer("call()", globals={"call": call}, num_threads=threads, timer=clock)
    m = timer.blocked_autorange(min_run_time=MIN_RUN_S)
    return m.median * 1e6, m.iqr / m.median


def _floor_us() -> float:
    import torch
    from torch.utils.benchmark import Timer

    x = torch.zeros(1)
    timer = Timer("x.add_(1)", globals={"x": x}, num_threads=1, timer=time.thread_time)
    return float(timer.blocked_autorange(min_run_time=0.1).median * 1e6)


def _peak(threads: int) -> float:
    import torch

    from torchscope.worker.calibrate import peaks

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return float(peaks("cpu", ["float32"])["matmul_gflops"]["float32"])
    finally:
        torch.set_num_threads(before)


def measure(call: Any, threads: int) -> Oracle:
    """The oracle for ``call`` (a callable of no arguments) judged at ``threads`` threads."""
    call()  # warm: first-touch pages, oneDNN primitives
    kinds = {"1": (1, False), "cpu1": (1, True), "2": (2, False)}
    medians: dict[str, list[float]] = {k: [] for k in kinds}
    spreads: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(ROUNDS):  # interleaved: a change of load hits every kind of timing
        for kind, (n, cpu) in kinds.items():
            median, spread = _timer_us(call, n, cpu)
            medians[kind].append(median)
            spreads[kind].append(spread)
    noise = {
        k: max(*spreads[k], (max(medians[k]) - min(medians[k])) / statistics.median(medians[k]))
        for k in kinds
    }
    return Oracle(
        t1_us=statistics.median(medians["1"]),
        t2_us=statistics.median(medians["2"]),
        cpu1_us=statistics.median(medians["cpu1"]),
        noise1=noise["cpu1"] if threads == 1 else noise["1"],
        noise2=noise["2"],
        flops=_flops(call),
        peak_gflops=_peak(threads),
        ops=_op_count(call),
        floor_us=_floor_us(),
        threads=threads,
    )


CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "workspace" / "families"
FAMILIES = {
    "mnist-cnn": ("mnist.py", "Net.forward"),
    "resnet-block": ("resnet.py", "BasicBlock.forward"),
    "vit-block": ("vit.py", "Block.forward"),
    "llama-block": ("llama.py", "TransformerBlock.forward"),
    "lstm": ("lstm.py", "RNNModel.forward"),
    "mlp": ("mlp.py", "MLP.forward"),
    "unet-level": ("unet.py", "UNetLevel.forward"),
    "embedding-bag": ("embedding_bag.py", "TextClassificationModel.forward"),
}
"""family → (file under ``CORPUS``, qualname); each family's ``train_step`` too (``targets``)."""


def targets() -> dict[str, tuple[Path, str]]:
    """Every target of the corpus: ``mlp`` (its forward) and ``mlp/train`` (its AdamW step)."""
    out: dict[str, tuple[Path, str]] = {}
    for family, (file, qualname) in FAMILIES.items():
        out[family] = (CORPUS / file, qualname)
        out[f"{family}/train"] = (CORPUS / file, "train_step")
    return out


def directive_call(path: Path, qualname: str) -> Any:
    """The target's first ``# torchscope:`` directive, evaluated once in a fresh import of its
    file: a callable of no arguments that makes the call."""
    from torchscope.source.targets import function_named, read_source
    from torchscope.worker.call_expression import prepare_call

    target = function_named(read_source(path), str(path), qualname)
    module = load(path, f"_oracle_{path.stem}_{qualname.replace('.', '_')}")
    return prepare_call(target.directives[0].call, vars(module)).invoke
