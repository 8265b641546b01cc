"""Open trace over LSP, before and after the analysis moved into a child process (issue 25).

Two servers run side by side: *now* (this tree: ``torchscope.analyzeTrace`` analyses in a
warm child process, ``host/trace_analysis.py``) and *before* (the revision ``--before``,
default ``bbdf6ac``: the analysis in a thread of the server process), from a temporary
``git worktree`` with its C extension built in place (removed at the end).
Requests alternate between the two, so both see the same machine load. For each:

- **Open trace**: ``torchscope.analyzeTrace`` sent → answer received, on a tiny trace, a
  1 MB and a 35 MB (uncompressed) trace, median of ``--runs``;
- **hover**: ``textDocument/hover`` on examples/matmul_add.py, median of 20 (the analysis
  must not slow what the editor does all the time);
- **server RSS**: the server process's own resident memory after the last analysis of the
  largest trace (the child's is not the server's).

    .venv/bin/python bench/open_trace_roundtrip.py [--runs 5] [--before REV]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analyze_command import before_tree  # a worktree of the old revision, built in place

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "tests" / "data" / "traces"
TINY = (
    b'{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,'
    b'"dur":5}]}'
)
EXAMPLE = REPO / "examples" / "matmul_add.py"


class Server:
    """One ``torchscope serve`` from the tree ``root``, and its client."""

    def __init__(self, name: str, root: Path) -> None:
        self.name, self.root = name, root
        self.client = LanguageClient("bench", "1")

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def logged(params: types.LogMessageParams) -> None:
            pass

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(params: types.ShowMessageParams) -> None:
            pass

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: types.PublishDiagnosticsParams) -> None:
            pass

    async def start(self, trace_dir: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(self.root / "server")}
        await self.client.start_io(sys.executable, "-m", "torchscope", "serve", env=env)
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=REPO.as_uri(),
                initialization_options={"settings": {"trace_dir": trace_dir}},
            )
        )
        self.client.initialized(types.InitializedParams())
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(EXAMPLE.as_uri(), "python", 1, EXAMPLE.read_text())
            )
        )

    async def open_trace(self, path: Path) -> float:
        start = time.perf_counter()
        result: Any = await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="torchscope.analyzeTrace", arguments=[{"path": str(path)}]
            )
        )
        elapsed = time.perf_counter() - start
        if not result["ok"]:
            raise RuntimeError(f"{self.name}: {result}")
        return elapsed

    async def hover(self) -> float:
        start = time.perf_counter()
        await self.client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=EXAMPLE.as_uri()),
                position=types.Position(line=14, character=4),
            )
        )
        return time.perf_counter() - start

    def rss_mb(self) -> float:
        server = self.client._server  # pygls keeps the process it started
        assert server is not None
        with open(f"/proc/{server.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def median_ms(values: list[float]) -> str:
    low = min(values) * 1000
    return f"{statistics.median(values) * 1000:8.1f} ms (min {low:.1f}, n={len(values)})"


async def measure(trees: dict[str, Path], runs: int, folder: Path) -> None:
    tiny = folder / "tiny.json"
    tiny.write_bytes(TINY)
    traces = {
        "tiny trace": tiny,
        "1 MB trace": TRACES / "hta_alexnet_a100.json.gz",
        "35 MB trace": TRACES / "kineto_resnet50_train_workers0_v100.json.gz",
    }
    servers = [Server(name, root) for name, root in trees.items()]
    for server in servers:
        await server.start(str(folder / f"traces-{server.name}"))
    await asyncio.sleep(3)  # both finish starting (the worker, the warm child)
    try:
        rss0 = {s.name: s.rss_mb() for s in servers}
        times: dict[tuple[str, str], list[float]] = {}
        for label, path in traces.items():
            for _ in range(runs):
                for server in servers:
                    times.setdefault((label, server.name), []).append(
                        await server.open_trace(path)
                    )
        for _ in range(20):
            for server in servers:
                times.setdefault(("hover", server.name), []).append(await server.hover())
        rss1 = {s.name: s.rss_mb() for s in servers}
    finally:
        for server in servers:
            await server.stop()
    for label in [*traces, "hover"]:
        print(label)
        for server in servers:
            print(f"  {server.name:7s} {median_ms(times[(label, server.name)])}")
    print("server RSS (the server process alone): at start → after the analyses")
    for server in servers:
        print(f"  {server.name:7s} {rss0[server.name]:6.0f} MB → {rss1[server.name]:6.0f} MB")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", default="bbdf6ac")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="torchscope-open-trace-"))
    with ExitStack() as stack:
        before = stack.enter_context(before_tree(args.before))
        asyncio.run(measure({"now": REPO, "before": before}, args.runs, folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
