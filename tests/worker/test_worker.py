"""The real worker on real torch (CPU): imports, call expressions, output, failures, kills."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import msgpack
import pytest
import pytest_asyncio

from tests.conftest import EXAMPLES, FIXTURES
from torchscope.host.worker_process import JobCancelled, WorkerError, WorkerProcess
from torchscope.protocol import (
    JobError,
    JobOptions,
    Output,
    ProfileRequest,
    ProfileResult,
    Progress,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

MATMUL_8 = "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))"


class Recorder:
    def __init__(self) -> None:
        self.stderr: list[str] = []
        self.output: list[Output] = []
        self.progress: list[Progress] = []


@pytest.fixture(scope="module")
def recorder() -> Recorder:
    return Recorder()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def worker(recorder: Recorder) -> AsyncIterator[WorkerProcess]:
    process = WorkerProcess(sys.executable, cwd=str(FIXTURES), on_stderr=recorder.stderr.append)
    hello = await process.start()
    assert hello.torch_version and hello.error is None
    yield process
    await process.close()


_ids = iter(range(1, 10_000))


async def run(
    worker: WorkerProcess,
    recorder: Recorder,
    tmp_path: Path,
    file: Path,
    qualname: str,
    call: str | None,
    timeout_s: float = 120,
) -> ProfileResult | JobError:
    if not worker.alive:
        await worker.start()
    request = ProfileRequest(
        job_id=next(_ids),
        file=str(file),
        qualname=qualname,
        call=call,
        trace_path=str(tmp_path / f"{qualname}.json.gz"),
        options=JobOptions(workspace_root=str(file.parent), steps=3, warmup=1, timing_budget_s=0.3),
    )
    reply = await worker.run(request, recorder.progress.append, recorder.output.append, timeout_s)
    assert isinstance(reply, (ProfileResult, JobError))
    return reply


def trace_names(path: str) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [event.get("name", "") for event in json.load(handle)["traceEvents"]]


async def test_module_level_function_gives_timing_and_a_trace(worker, recorder, tmp_path) -> None:
    result = await run(worker, recorder, tmp_path, EXAMPLES / "matmul_add.py", "fn", MATMUL_8)
    assert isinstance(result, ProfileResult), result
    measured = result.measured
    assert measured.device_kind == "cpu" and measured.cold_us > 0
    assert len(measured.call_us) >= 3 and all(t > 0 for t in measured.call_us)
    assert 0.05 < measured.dispatch_floor_us < 100
    names = trace_names(result.trace_path)
    assert [n for n in names if n.startswith("ProfilerStep#")] == [
        "ProfilerStep#1",
        "ProfilerStep#2",
        "ProfilerStep#3",
    ]
    assert names.count("aten::mm") == 3 and names.count("aten::add") == 3
    stages = [p.stage for p in recorder.progress if p.job_id == result.job_id]
    assert stages == ["setup", "cold", "warmup", "timing", "profile"]


async def test_method_of_a_class(worker, recorder, tmp_path) -> None:
    call = "Affine(8).apply(torch.randn(8, 8))"
    result = await run(
        worker, recorder, tmp_path, FIXTURES / "pkg" / "models.py", "Affine.apply", call
    )
    assert isinstance(result, ProfileResult), result
    assert "aten::matmul" in trace_names(result.trace_path)


async def test_nn_module_forward(worker, recorder, tmp_path) -> None:
    call = "TinyNet().forward(torch.randn(4, 16))"
    result = await run(
        worker, recorder, tmp_path, FIXTURES / "pkg" / "models.py", "TinyNet.forward", call
    )
    assert isinstance(result, ProfileResult), result
    names = trace_names(result.trace_path)
    assert "aten::linear" in names and "aten::relu" in names


async def test_package_relative_import(worker, recorder, tmp_path) -> None:
    result = await run(
        worker,
        recorder,
        tmp_path,
        FIXTURES / "pkg" / "models.py",
        "scaled",
        "scaled(torch.randn(4))",
    )
    assert isinstance(result, ProfileResult), result
    assert "aten::mul" in trace_names(result.trace_path)


async def test_zero_argument_function_needs_no_call(worker, recorder, tmp_path) -> None:
    result = await run(worker, recorder, tmp_path, FIXTURES / "samples.py", "no_args", None)
    assert isinstance(result, ProfileResult), result
    assert "aten::add" in trace_names(result.trace_path)


async def test_prints_reach_the_log_and_the_protocol_survives(worker, recorder, tmp_path) -> None:
    result = await run(
        worker, recorder, tmp_path, FIXTURES / "samples.py", "chatty", "chatty(torch.ones(2))"
    )
    assert isinstance(result, ProfileResult), result
    forwarded = "".join(o.text for o in recorder.output if o.job_id == result.job_id)
    assert "hello from user code" in forwarded
    await asyncio.sleep(0.2)  # stderr is read concurrently with the result
    assert any("raw write to fd 1" in line for line in recorder.stderr)
    again = await run(worker, recorder, tmp_path, FIXTURES / "samples.py", "no_args", None)
    assert isinstance(again, ProfileResult)


async def test_missing_call_expression_is_a_clear_error(worker, recorder, tmp_path) -> None:
    result = await run(worker, recorder, tmp_path, FIXTURES / "samples.py", "needs_args", None)
    assert isinstance(result, JobError)
    assert result.kind == "call-missing" and "# torchscope:" in result.message


async def test_raising_user_code_points_at_its_line(worker, recorder, tmp_path) -> None:
    result = await run(worker, recorder, tmp_path, FIXTURES / "samples.py", "raises", "raises(1)")
    assert isinstance(result, JobError)
    assert result.kind == "call-raised" and "boom from user code" in result.message
    source_lines = (FIXTURES / "samples.py").read_text().splitlines()
    assert source_lines[result.line - 1].strip() == 'raise ValueError("boom from user code")'
    assert "torchscope/worker" not in result.traceback


async def test_bad_call_expressions(worker, recorder, tmp_path) -> None:
    samples = FIXTURES / "samples.py"
    syntax = await run(worker, recorder, tmp_path, samples, "needs_args", "needs_args(")
    assert isinstance(syntax, JobError) and syntax.kind == "call-invalid"
    not_a_call = await run(worker, recorder, tmp_path, samples, "needs_args", "needs_args")
    assert isinstance(not_a_call, JobError) and "not a call" in not_a_call.message
    raising = await run(
        worker, recorder, tmp_path, samples, "needs_args", "needs_args(undefined_name, 1)"
    )
    assert isinstance(raising, JobError) and raising.kind == "call-raised"
    assert "undefined_name" in raising.message


async def test_unknown_function_lists_the_module_contents(worker, recorder, tmp_path) -> None:
    result = await run(worker, recorder, tmp_path, FIXTURES / "samples.py", "nope", None)
    assert isinstance(result, JobError) and result.kind == "target"
    assert "no_args" in result.message


async def test_edited_code_is_reimported_for_every_job(worker, recorder, tmp_path) -> None:
    module = tmp_path / "editable.py"
    module.write_text(
        "import torch\n\ndef f():\n    print('version one')\n    return torch.ones(1)\n"
    )
    first = await run(worker, recorder, tmp_path, module, "f", None)
    module.write_text(
        "import torch\n\ndef f():\n    print('version two')\n    return torch.ones(1)\n"
    )
    os.utime(module, (module.stat().st_atime + 5, module.stat().st_mtime + 5))
    second = await run(worker, recorder, tmp_path, module, "f", None)
    texts = {
        r.job_id: "".join(o.text for o in recorder.output if o.job_id == r.job_id)
        for r in (first, second)
    }
    assert "version one" in texts[first.job_id]
    assert "version two" in texts[second.job_id] and "version one" not in texts[second.job_id]


async def test_timeout_kills_the_worker_and_the_next_job_runs(worker, recorder, tmp_path) -> None:
    pid = worker.hello.pid if worker.hello else 0
    with pytest.raises(JobCancelled, match="did not finish within 3 s"):
        await run(
            worker, recorder, tmp_path, FIXTURES / "samples.py", "slow", "slow(1)", timeout_s=3
        )
    assert not worker.alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    result = await run(worker, recorder, tmp_path, FIXTURES / "samples.py", "no_args", None)
    assert isinstance(result, ProfileResult)


async def test_cancelling_kills_the_job(worker, recorder, tmp_path) -> None:
    task = asyncio.ensure_future(
        run(worker, recorder, tmp_path, FIXTURES / "samples.py", "slow", "slow(1)")
    )
    while not any(p.stage == "cold" for p in recorder.progress[-3:]):
        await asyncio.sleep(0.05)
    pid = worker.hello.pid if worker.hello else 0
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not worker.alive
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_missing_torch_is_reported_with_the_fix(tmp_path) -> None:
    """An interpreter without torch gets a message naming it and the pip command to fix it."""
    bare = shutil.which("python3", path="/usr/bin:/bin")
    if bare is None or bare == sys.executable:
        pytest.skip("no system python3 without torch on this machine")
    libs = tmp_path / "libs"
    shutil.copytree(
        Path(msgpack.__file__).parent, libs / "msgpack"
    )  # only the protocol's dependency
    process = WorkerProcess(bare, cwd=str(tmp_path), extra_paths=[str(libs)])
    with pytest.raises(WorkerError, match=r"torch cannot be imported in .*pip install torch"):
        await process.start()
    assert not process.alive
