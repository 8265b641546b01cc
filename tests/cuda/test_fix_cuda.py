"""The CUDA-only measured fixes on a real GPU: ``pinned-transfer`` (a host → device copy) and
``sync-in-loop`` (``.item()`` per iteration) run with the same outputs, and their measured
direction is the one ``torch.utils.benchmark`` gives the same two functions in the same run
(as the CPU fixes in ``tests/worker/test_fix.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.worker.test_fix import _trials, reference_rounds

pytestmark = pytest.mark.cuda

SAMPLES = FIXTURES / "fix_cuda_samples.py"


@pytest.mark.parametrize(
    ("qualname", "fix_id"), [("upload", "pinned-transfer"), ("item_loop", "sync-in-loop")]
)
def test_cuda_fix_matches_and_agrees_with_torch_benchmark(
    tmp_path: Path, trace_dir: Path, qualname: str, fix_id: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    samples = Path(shutil.copy(SAMPLES, work / SAMPLES.name))
    [trial] = _trials(samples, trace_dir, [(qualname, fix_id)])
    rounds = reference_rounds(samples, qualname, fix_id, device="cuda")
    print(f"{fix_id} on {qualname}: {trial.message}; benchmark rounds {rounds}")
    assert trial.same_outputs, trial.message
    if rounds[1] > 1:  # faster in all but one round of the benchmark
        assert trial.verdict == "faster", (trial.message, rounds)
    if trial.verdict == "slower":
        assert rounds[-2] < 1, (trial.message, rounds)
