"""Round trip of ``torchscope.profile`` over LSP vs a hand-written torch.profiler script.

Request sent → diagnostics received, on examples/matmul_add.py at 8×8 and 64×64:

- *cold*: a fresh server, so the first job also starts the worker and imports torch;
- *warm*: the same server again (the worker and torch are already up).

``--first-click`` measures issue 16's first click as the editor sees it (issue 53 keeps it):
a fresh server with ``prestart: auto`` prestarts the worker (torch imported, the CPU
profiler warmed, no calibration, no GPU work); once it logs "worker ready" the request is
sent, and request → diagnostics is timed. Three cases: this machine calibrated (every click
after the first profile on it), a fresh ``XDG_CACHE_HOME`` (the first profile ever on a
machine: it calibrates the CPU's peaks), and ``prestart: off`` (the worker starts at the
request). The VS Code end-to-end test (``tests/vscode``) measures the same with the editor's
own context menu on top (0.2–0.3 s).

Baseline, in the same run: ``python script.py`` that imports torch, profiles 5 steps of the
same function and prints the profiler table — what a user would otherwise type.

    .venv/bin/python bench/lsp_roundtrip.py [--runs 3] [--first-click [--before CHECKOUT]]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any, Optional

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
        self.worker_ready = asyncio.Event()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            self.diagnostics.set()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            if params.message.startswith("worker ready"):  # the prestart is done
                self.worker_ready.set()

        @self.client.feature("torchscope/profileDone")
        def done(params: Any) -> None:
            pass

    async def start(
        self,
        trace_dir: str,
        settings: Optional[dict[str, Any]] = None,
        cache: str = "",
        checkout: Path = REPO,
    ) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout / "server")}
        if cache:
            env["XDG_CACHE_HOME"] = cache
        await self.client.start_io(sys.executable, "-m", "torchscope", "serve", env=env)
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=REPO.as_uri(),
                initialization_options={"settings": {"trace_dir": trace_dir, **(settings or {})}},
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


async def first_click_times(
    n: int, runs: int, trace_dir: str, prestart: str, fresh_cache: bool, checkout: Path = REPO
) -> list[float]:
    """Request → diagnostics in a fresh server, once its prestart is done (``prestart:
    off``: at once); ``fresh_cache``: a new ``XDG_CACHE_HOME`` each run (nothing calibrated);
    ``checkout``: the repository whose server runs."""
    times = []
    for _ in range(runs):
        session = Session()
        cache = tempfile.mkdtemp(prefix="torchscope-cache-") if fresh_cache else ""
        await session.start(trace_dir, {"prestart": prestart}, cache, checkout)
        try:
            if prestart == "auto":
                await asyncio.wait_for(session.worker_ready.wait(), 300)
            else:
                await asyncio.sleep(1.0)  # as long as the editor would give it: nothing starts
            times.append(await session.profile(n))
        finally:
            await session.stop()
            if cache:
                shutil.rmtree(cache, ignore_errors=True)
    return times


def first_click_against(before: Path, runs: int, folder: Path) -> None:
    """The first click (prestart auto, machine calibrated) of this checkout and of ``before``
    (another checkout: its ``server/``), alternating, so both meet the same load."""
    n, traces = 64, str(folder / "traces")
    now: list[float] = []
    then: list[float] = []
    for _ in range(runs):
        now += asyncio.run(first_click_times(n, 1, traces, "auto", False))
        then += asyncio.run(first_click_times(n, 1, traces, "auto", False, before))
    base = baseline_times(n, runs, folder)
    print(f"first click, {n}×{n}, prestart auto, machine calibrated; alternating with {before}")
    print(f"  now     : {describe(now)}  {statistics.median(now) / statistics.median(base):.2f}×")
    print(f"  before  : {describe(then)}  {statistics.median(then) / statistics.median(base):.2f}×")
    print(f"  script  : {describe(base)}")
    print(f"  now / before: {statistics.median(now) / statistics.median(then):.2f}×")


def first_click(runs: int, folder: Path) -> None:
    n = 64  # as tests/vscode's baseline
    traces = str(folder / "traces")
    asyncio.run(first_click_times(n, 1, traces, "auto", False))  # this machine calibrated
    cases = {
        "prestart auto, machine calibrated": ("auto", False),
        "prestart auto, first profile on the machine": ("auto", True),
        "prestart off": ("off", False),
    }
    measured = {
        name: asyncio.run(first_click_times(n, runs, traces, *case)) for name, case in cases.items()
    }
    base = baseline_times(n, runs, folder)
    print(f"first click, {n}×{n} (request → diagnostics once the server logged its start)")
    for name, times in measured.items():
        ratio = statistics.median(times) / statistics.median(base)
        print(f"  {name:45}: {describe(times)}  {ratio:.2f}× the script")
    print(f"  {'hand-written script':45}: {describe(base)}")
    auto = statistics.median(measured["prestart auto, machine calibrated"])
    ratio = auto / statistics.median(base)
    verdict = "pass" if ratio <= 0.3 else "FAIL"
    print(f"  target ≤ 0.3× with prestart auto: {ratio:.2f}× ({verdict})")


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
    parser.add_argument("--first-click", action="store_true", help="issue 16's first click")
    parser.add_argument(
        "--before", type=Path, help="with --first-click: a checkout to compare with, alternating"
    )
    args = parser.parse_args()
    runs = args.runs
    folder = Path(tempfile.mkdtemp(prefix="torchscope-roundtrip-"))
    if args.first_click and args.before:
        first_click_against(args.before.resolve(), runs, folder)
        return 0
    if args.first_click:
        first_click(runs, folder)
        return 0
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
