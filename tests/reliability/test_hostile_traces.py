"""Every hostile trace (``hostile.py``) through ``torchscope analyze``, text and ``--json``:
the analysis, or one message on stderr naming the file, exit code 1 and nothing on stdout;
never a traceback. (The servers: ``test_hostile_servers.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.reliability.conftest import ENV, TORCHSCOPE
from tests.reliability.hostile import CASES, IDS, Hostile, as_reader, made, skip_unless_testable


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_cli(case: Hostile, as_json: bool, tmp_path: Path) -> None:
    skip_unless_testable(case)
    path = made(case, tmp_path)
    run = subprocess.run(
        [*as_reader(), *TORCHSCOPE, "analyze", str(path), *(["--json"] if as_json else [])],
        env=ENV, cwd=REPO, capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    stderr = run.stderr.decode()
    assert b"Traceback" not in run.stderr, stderr
    needle = case.cli_needle or case.needle
    if needle is None:
        assert run.returncode == 0, stderr
        out = run.stdout.decode("utf-8")  # strict: the output is valid UTF-8
        if as_json:
            report = json.loads(out)
            assert case.check is not None
            case.check(report)
        else:
            assert "verdict:" in out
        return
    assert run.returncode == 1, (run.returncode, stderr)
    assert run.stdout == b""
    [line] = stderr.strip().splitlines()  # one message, one line
    assert line.startswith("torchscope: ") and path.name in line and needle in line, line


def test_cli_gzip_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """500 MB of inflated blanks: refused once the inflation ratio shows, peak RSS far below
    the inflated size (``wait4`` gives this process's own peak)."""
    from tests.reliability.hostile import gzip_bomb

    path = gzip_bomb(tmp_path / "bomb.json.gz")
    process = subprocess.Popen(
        [*TORCHSCOPE, "analyze", str(path)], env=ENV, cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 1 and "a gzip bomb" in stderr, stderr
    assert usage.ru_maxrss < 250 * 1024, usage.ru_maxrss  # KB: under 250 MB for 500 MB inflated
