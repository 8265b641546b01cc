"""The memory pass end to end: ``torchscope profile --memory`` in a real worker on real torch,
against numbers known from the fixture's tensor sizes and an independent ``getrusage``."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.conftest import FIXTURES, REPO
from tests.worker.test_cli import ENV

SAMPLES = FIXTURES / "memory_samples.py"


def profile(call: str, qualname: str, trace_dir: Path, *extra: str) -> dict[str, Any]:
    run = subprocess.run(
        [
            *(sys.executable, "-m", "torchscope", "profile", f"{SAMPLES}::{qualname}"),
            *("--call", call, "--json", "-q", "--steps", "3", "--warmup", "1"),
            *("--trace-dir", str(trace_dir), *extra),
        ],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    data: dict[str, Any] = json.loads(run.stdout)
    return data


def source_line(text: str) -> int:
    return SAMPLES.read_text().splitlines().index(text) + 1


def test_two_temporaries_leak_and_peak_are_on_their_lines(trace_dir: Path) -> None:
    call = "two_temporaries(torch.randn(2048, 1024))"
    data = profile(call, "two_temporaries", trace_dir, "--memory")
    expected = 2048 * 1024 * 4  # numel × element_size of each temporary
    lines = {entry["line"]: entry for entry in data["lines"]}
    for text in ("    a = x * 2.0", "    b = x.exp()"):
        cpu = lines[source_line(text)]["memory"]["device"]["cpu"]
        assert abs(cpu["alloc_bytes"] - expected) <= 0.05 * expected, (text, cpu)
        assert cpu["allocs"] >= 1 and cpu["alive_bytes"] == 0.0
    leak_line = source_line("    LEAKED.append(x[:1].clone())")
    leaks = [f for f in data["findings"] if f["rule"] == "leak"]
    assert [f["line"] for f in leaks] == [leak_line]
    assert lines[leak_line]["memory"]["device"]["cpu"]["alive_bytes"] == 1024 * 4
    memory = data["memory"]
    assert memory["peak_line"] == source_line("    b = x.exp()")
    assert 2 * expected <= memory["peak_bytes"] <= 2.1 * expected


def plain_faults_per_call(calls: int = 5) -> float:
    sys.path.insert(0, str(FIXTURES))
    try:
        import memory_samples
    finally:
        sys.path.remove(str(FIXTURES))
    x = torch.randn(4096, 4096)
    memory_samples.fresh_pages(x)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        memory_samples.fresh_pages(x)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def test_page_faults_match_getrusage_and_churn_fires_only_without_out(trace_dir: Path) -> None:
    data = profile("fresh_pages(torch.randn(4096, 4096))", "fresh_pages", trace_dir, "--memory")
    reported = data["memory"]["page_faults_per_call"]
    independent = plain_faults_per_call()
    assert independent > 10_000  # two fresh 64 MB tensors: 32k pages of 4 KiB (fewer with THP)
    assert abs(reported - independent) <= 0.2 * independent, (reported, independent)
    assert data["memory"]["page_fault_us"] > 0 and data["memory"]["page_fault_share"] > 0.1
    churn = [f for f in data["findings"] if f["rule"] == "allocation-churn"]
    assert len(churn) == 1 and churn[0]["line"] in {
        source_line("    y = x + 1.0"),
        source_line("    z = y * 2.0"),
    }
    out = profile(
        "preallocated(torch.randn(4096, 4096), torch.empty(4096, 4096), torch.empty(4096, 4096))",
        "preallocated",
        trace_dir,
        "--memory",
    )
    assert not [f for f in out["findings"] if f["rule"] == "allocation-churn"]


@pytest.mark.parametrize("memory", [False, True])
def test_page_fault_fields_are_on_every_profile(trace_dir: Path, memory: bool) -> None:
    data = profile(
        "preallocated(torch.randn(64, 64), torch.empty(64, 64), torch.empty(64, 64))",
        "preallocated",
        trace_dir,
        *(["--memory"] if memory else []),
    )
    assert {"peak_bytes", "peak_line", "page_faults_per_call", "page_fault_us"} <= set(
        data["memory"]
    )
    assert data["memory"]["page_faults_per_call"] is not None
    assert (data["memory"]["peak_bytes"] is not None) == memory
    assert all(("memory" in line) == memory for line in data["lines"] if memory is False)
