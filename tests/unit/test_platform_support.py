"""Windows is refused with one line naming WSL and Remote-SSH, by the CLI (so ``torchscope
serve`` too) and by the VS Code extension (the same sentence); where the native trace reader
is missing, ``torchscope analyze -v`` says so once, with what it costs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, SHARED_TRACES
from torchscope import cli, support

TRACE = SHARED_TRACES / "hta_alexnet_a100.json.gz"


def test_the_check_refuses_windows_alone() -> None:
    assert support.refusal("win32") == support.WINDOWS_REFUSAL
    assert "WSL" in support.WINDOWS_REFUSAL and "Remote-SSH" in support.WINDOWS_REFUSAL
    for platform in ("linux", "darwin", "cygwin"):
        assert support.refusal(platform) is None
    assert support.refusal() is None  # this machine


@pytest.mark.parametrize("argv", [["analyze", str(TRACE)], ["serve", "--help"], ["--version"]])
def test_the_cli_refuses_on_windows_with_one_line(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"torchscope: {support.WINDOWS_REFUSAL}\n"


def test_the_extension_refuses_with_the_same_sentence() -> None:
    constants = (REPO / "extension" / "src" / "constants.ts").read_text()
    declared = re.search(r"export const WINDOWS_REFUSAL =\s*((?:\"[^\"]*\"\s*\+?\s*)+);", constants)
    assert declared, "extension/src/constants.ts lacks WINDOWS_REFUSAL"
    assert "".join(re.findall(r'"([^"]*)"', declared.group(1))) == support.WINDOWS_REFUSAL
    check = (REPO / "extension" / "src" / "platform.ts").read_text()
    assert 'platform === "win32" ? WINDOWS_REFUSAL' in check  # its mocha test: platform.test.ts
    activate = (REPO / "extension" / "src" / "extension.ts").read_text()
    assert re.search(
        r"refusal\(process\.platform\);[^}]*showErrorMessage\(refused\);\s*return;", activate
    )


def _analyze_v(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchscope", "analyze", "-v", str(TRACE)],
        capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )  # fmt: skip


def test_analyze_v_says_once_when_the_native_reader_is_missing() -> None:
    from torchscope.ingest import accel

    missing = _analyze_v({"TORCHSCOPE_NO_NATIVE": "1"})
    assert missing.returncode == 0, missing.stderr
    lines = [line for line in missing.stderr.splitlines() if "native trace reader" in line]
    assert len(lines) == 1, missing.stderr
    assert "TORCHSCOPE_NO_NATIVE" in lines[0] and accel.PURE_PYTHON_COST in lines[0]
    if accel.native is None:
        pytest.skip("no native reader built here to compare with")
    present = _analyze_v({})
    assert present.returncode == 0, present.stderr
    assert "native trace reader is not loaded" not in present.stderr
    assert "trace reader: native (C)" in present.stderr
    assert present.stdout == missing.stdout  # same report either way


def test_the_cost_stated_is_the_one_measured() -> None:
    """``PURE_PYTHON_COST`` restates docs/performance.md's measured figure."""
    from torchscope.ingest import accel

    factor = re.search(r"([\d.]+)x", accel.PURE_PYTHON_COST)
    assert factor
    performance = (REPO / "docs" / "performance.md").read_text()
    assert f"the pure-Python reader {factor.group(1)}× slower" in performance
