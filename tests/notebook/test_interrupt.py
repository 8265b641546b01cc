"""Ctrl-C in a notebook: a long ``%torchscope`` interrupted through the kernel
(``KernelManager.interrupt_kernel``, SIGINT as Jupyter's stop button sends it) stops cleanly:
no profiler left running, the thread count restored, and the next cell profiles normally."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.kernel import outputs_of
from tests.notebook.test_magics import MIME_JSON, SETUP, run_notebook

pytest.importorskip("nbclient")

#: ``slow`` leaves a file once it runs under the profiler: the test interrupts then.
SLOW = (
    "import pathlib, time\n"
    "def slow(x):\n"
    "    time.sleep(0.02)\n"
    "    if torch.autograd._profiler_enabled():\n"
    "        pathlib.Path('profiling').touch()\n"
    "    return x @ x\n"
    "a = torch.randn(8, 8)"
)
#: About 0.1 s of calls before the profiled pass, then 1000 profiled calls (20 s).
LONG = "%torchscope --steps 1000 --warmup 1 --timing-budget 0.1 slow(a)"
AFTER = (
    "print('profiler on:', torch.autograd._profiler_enabled(), 'threads:', "
    "torch.get_num_threads())"
)
AGAIN = "%torchscope --steps 3 slow(a)"


def test_interrupting_a_long_profile_leaves_no_profiler_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    timing: dict[str, float] = {}
    flag = tmp_path / "profiling"  # the kernel's working directory is tmp_path

    def interrupt_when_profiling(client: Any) -> None:
        deadline = time.monotonic() + 240
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        timing["interrupted"] = time.monotonic()
        # nbclient's manager is jupyter_client's AsyncKernelManager: its interrupt_kernel is
        # a coroutine, run here on this thread's own loop.
        asyncio.run(client.km.interrupt_kernel())

    def interrupt_then_continue(client: Any, nb: Any) -> None:
        client.allow_errors = True
        thread = threading.Thread(target=interrupt_when_profiling, args=(client,), daemon=True)
        thread.start()
        client.execute_cell(nb.cells[2], 2)
        timing["long"] = time.monotonic() - timing.get("interrupted", 0.0)
        thread.join()
        client.allow_errors = False
        for index in (3, 4):
            client.execute_cell(nb.cells[index], index)

    cells = [SETUP, SLOW, LONG, AFTER, AGAIN]
    nb = run_notebook(cells, tmp_path, monkeypatch, interrupt_then_continue, first=2)
    interrupted = outputs_of(nb.cells[2])
    assert interrupted.get("error") == "KeyboardInterrupt", interrupted
    assert "interrupted" in timing, "the profiled pass never started"
    assert timing["long"] < 10, timing  # stopped at once, not after its 1000 profiled calls
    assert "profiler on: False threads: 1" in outputs_of(nb.cells[3])["stdout"]
    again = outputs_of(nb.cells[4])
    assert again[MIME_JSON]["verdict"]["id"], again
    assert len(again[MIME_JSON]["steps"]) == 3
