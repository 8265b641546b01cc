"""Verdicts on the model-family corpus held to an independent oracle (issue 55).

Each family of ``tests/fixtures/workspace/families`` (an MNIST CNN, a ResNet basic block in
training mode, a ViT block, a Llama-style block, an LSTM on (T, B), an MLP, a UNet level, an
EmbeddingBag model), its forward and its AdamW training step, is profiled by the real worker at
one thread (``OMP_NUM_THREADS=1``, as the suite's other verdict tests), and the same call is
measured right after by ``tests/worker/family_oracle.py``: ``torch.utils.benchmark`` at 1 and 2
threads, ``FlopCounterMode``'s FLOPs against this machine's measured peak, the ops one call
dispatches times the cost of one. The verdict's class must be one the oracle allows (or, where
the oracle's own timings are noisier than ``NOISE``, the verdict must say ``stable: false``).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.worker.family_oracle import (
    Oracle,
    agrees,
    directive_call,
    measure,
    targets,
    verdict_class,
)
from torchscope.host.profile_run import PROFILE, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.source.targets import function_named, read_source

TARGETS = targets()


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], Oracle]]:
    """Every target profiled (one worker, one thread), each followed by its oracle."""
    store = TraceStore(tmp_path_factory.mktemp("family-traces"))
    options = JobOptions(steps=3, warmup=2, timing_budget_s=0.5)

    async def go() -> dict[str, tuple[dict[str, Any], Oracle]]:
        profiler = Profiler(sys.executable, store, cwd=str(FIXTURES))
        out = {}
        try:
            for name, (path, qualname) in TARGETS.items():
                target = function_named(read_source(path), str(path), qualname)
                report = to_builtins(await profiler.run_job(PROFILE, target, None, options))
                out[name] = (report, measure(directive_call(path, qualname), threads=1))
        finally:
            await profiler.close()
        return out

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        return asyncio.run(go())


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_the_verdict_agrees_with_the_oracle(judged, name: str) -> None:
    report, oracle = judged[name]
    verdict = report["verdict"]
    print(
        f"{name}: {verdict_class(verdict)} ({verdict['headline'][:90]}) | oracle {oracle.label()}"
    )
    assert report["peaks"]["device"] == "cpu:1t"  # judged at the thread count the oracle used
    assert agrees(oracle, verdict), (name, verdict["headline"], oracle.label())


def test_the_oracle_tells_the_classes_apart(judged) -> None:
    """The corpus spans the classes: the oracle is not one answer for everything. An MLP's
    large GEMMs run several times nearer the peak than an LSTM's small steps, whatever the
    load (measured 42-85 % against 2-7 %), and the LSTM is never compute-bound."""
    mlp, lstm = judged["mlp"][1], judged["lstm"][1]
    assert mlp.efficiency > 3 * lstm.efficiency, (mlp.label(), lstm.label())
    assert "compute" not in lstm.classes()
