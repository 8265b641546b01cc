"""The language server's own RSS while it opens a large trace (issue 25: a 2 GB trace leaves
it within 50 MB of where it was).

A real ``torchscope serve`` over stdio (pygls' client, as ``lsp_roundtrip.py``) opens a small
trace (its lazy imports), then a synthetic trace of about MB megabytes through
``torchscope.analyzeTrace`` (what Open trace sends; the analysis runs in the server's child
process); the server process's VmRSS is sampled every 10 ms until the answer arrives. The
trace is written under a temporary folder and deleted after. Run through
``bench/large_traces.py --server MB``, or:

    .venv/bin/python bench/server_memory.py [MB]   # default 2000
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
BYTES_PER_EVENT = 196  # run_all.synthesise's JSON per event
TARGET_MB = 50.0
_SYNTH = (
    "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
    "from run_all import synthesise; print(synthesise(int(sys.argv[2]), Path(sys.argv[3])))"
)
_GOOD = (
    b'{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,'
    b'"dur":5,"args":{}}]}'
)


def vm_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(ln for ln in status if ln.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def _open(client: LanguageClient, path: Path) -> Any:
    params = types.ExecuteCommandParams(
        command="torchscope.analyzeTrace", arguments=[{"path": str(path)}]
    )
    return await client.workspace_execute_command_async(params)


async def measure(big: Path, small: Path, folder: str) -> tuple[float, float, float, Any]:
    """(RSS before, peak while, seconds) of the server opening ``big``, and the result."""
    client = LanguageClient("bench", "1")

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def shown(params: types.ShowMessageParams) -> None:
        pass

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def logged(params: types.LogMessageParams) -> None:
        pass

    env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
    await client.start_io(sys.executable, "-m", "torchscope", "serve", env=env)
    try:
        await client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=REPO.as_uri(),
                initialization_options={"settings": {"trace_dir": folder}},
            )
        )
        client.initialized(types.InitializedParams())
        await _open(client, small)
        pid = client._server.pid  # type: ignore[union-attr]
        before = peak = vm_rss_mb(pid)
        start = time.perf_counter()
        request = asyncio.ensure_future(_open(client, big))
        while not request.done():
            peak = max(peak, vm_rss_mb(pid))
            await asyncio.sleep(0.01)
        seconds = time.perf_counter() - start
        return before, max(peak, vm_rss_mb(pid)), seconds, request.result()
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


def main(megabytes: float = 2000) -> int:
    events = int(megabytes * 1e6 / BYTES_PER_EVENT)
    with tempfile.TemporaryDirectory(prefix="torchscope-server-memory-") as folder:
        big, small = Path(folder) / "synth.json", Path(folder) / "good.json"
        small.write_bytes(_GOOD)
        out = subprocess.run(
            [sys.executable, "-c", _SYNTH, str(BENCH), str(events), str(big)],
            capture_output=True, text=True, check=True,
        )
        size = int(out.stdout.split()[-1])
        print(f"trace: {events:,} events, {size / 1e6:,.0f} MB of JSON", flush=True)
        before, peak, seconds, result = asyncio.run(measure(big, small, folder))
    growth = peak - before
    outcome = "analysed" if result["ok"] else f"refused: {result['error']}"
    print(f"server answered in {seconds:.1f} s ({outcome})")
    verdict = "ok" if growth < TARGET_MB else "MISSED"
    print(
        f"server RSS: {before:.0f} MB before, peak {peak:.0f} MB while opening: +{growth:.0f} MB"
        f" (target < {TARGET_MB:.0f} MB): {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]) if len(sys.argv) > 1 else 2000))
