"""``profile_in_run`` says why the timed call and the program's calls differ (issue 55): the
MCP answer carries ``run.timing_note`` and states it, on the MNIST script whose last batch of
the epoch is smaller (``tests/fixtures/workspace/run_mnist/train_mnist.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.mcp_server.test_mcp_server import text, torchscope_mcp


async def test_profile_in_run_names_another_batch_size(
    trace_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as the worker tests: two threads on a loaded
    # 2-core machine spread the timing samples 0.8-350 ms, and no difference is beyond that
    script = Path(shutil.copy(FIXTURES / "run_mnist" / "train_mnist.py", tmp_path))
    entry = ["python", str(script), "--batch-size", "64", "--last-batch", "2"]
    run = {"targets": [f"{script}::Net.forward"], "entry": entry, "calls": 4}
    async with torchscope_mcp(trace_dir) as client:
        result = await client.call_tool("profile_in_run", run)
    assert not result.is_error, text(result)
    [report] = result.structured_content["targets"]
    note = report["run"]["timing_note"]
    assert "other shapes: 2 of the program's 2 calls had [64, 1, 28, 28], the timed call " in note
    assert note in text(result)
