"""Round trip of ``torchscope.profile`` over LSP vs a hand-written torch.profiler script.

Request sent → diagnostics received, on examples/matmul_add.py at 8×8 and 64×64:

- *cold*: a fresh server, so the first job also starts the worker and imports torch;
- *warm*: the same server again (the worker and torch are already up).

Baseline, in the same run: ``python script.py`` that imports torch, profiles 5 steps of the
same function and prints the profiler table — what a user would otherwise type.

    .venv/bin/python bench/lsp_roundtrip.py [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "matmul_add.py"
CALL = "fn(torch.randn({n}, {n}), torch.randn({n}, {n}), torch.randn({n}, {n}))"

BASELINE = textwrap.dedent(
    """
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    def fn(x, w, b):
        return torch.add(torch.matmul(x, w), b)

    n = {n}
    x, w, b = torch.randn(n, n), torch.randn(n, n), torch.randn(n, n)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=0, warmup=1, active=5, repeat=1)) as prof:
        for _ in range(6):
            fn(x, w, b)
            prof.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    """
)


class Session:
    """One server process and a client that records when diagnostics arrive."""

    def __init__(self) -> None:
        self.client = LanguageClient("bench", "1")
        self.diagnostics = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics.set()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            pass  # the worker's output: not what this bench measures

        @self.client.feature("torchscope/profileDone")
        def done(params: Any) -> None:
            pass

    async def start(self, trace_dir: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
        await self.client.start_io(sys.executable, "-m", "torchscope", "serve", env=env)
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=REPO.as_uri(),
                initialization_options={"settings": {"trace_dir": trace_dir}},
            )
        )
        self.client.initialized(types.InitializedParams())

    async def profile(self, n: int) -> float:
        self.diagnostics.clear()
        args: dict[str, Any] = {"uri": EXAMPLE.as_uri(), "line": 14, "call": CALL.format(n=n)}
        start = time.perf_counter()
        result = await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchscope.profile", arguments=[args])
        )
        await self.diagnostics.wait()
        elapsed = time.perf_counter() - start
        if not result["ok"]:
            raise RuntimeError(result)
        return elapsed

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def lsp_times(n: int, runs: int, trace_dir: str) -> tuple[list[float], list[float]]:
    cold, warm = [], []
    for _ in range(runs):
        session = Session()
        await session.start(trace_dir)
        try:
            cold.append(await session.profile(n))
            for _ in range(2):
                warm.append(await session.profile(n))
        finally:
            await session.stop()
    return cold, warm


def baseline_times(n: int, runs: int, folder: Path) -> list[float]:
    script = folder / f"baseline_{n}.py"
    script.write_text(BASELINE.replace("{n}", str(n)))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def describe(values: list[float]) -> str:
    spread = f"min {min(values):.2f}, max {max(values):.2f}, n={len(values)}"
    return f"median {statistics.median(values):5.2f} s ({spread})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    folder = Path(tempfile.mkdtemp(prefix="torchscope-roundtrip-"))
    for n in (8, 64):
        cold, warm = asyncio.run(lsp_times(n, runs, str(folder / "traces")))
        base = baseline_times(n, runs, folder)
        print(f"{n}×{n}")
        print(f"  torchscope.profile cold : {describe(cold)}")
        print(f"  torchscope.profile warm : {describe(warm)}")
        print(f"  hand-written script     : {describe(base)}")
        print(
            f"  ratios: cold/script {statistics.median(cold) / statistics.median(base):.2f}×, "
            f"warm/script {statistics.median(warm) / statistics.median(base):.2f}×"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
