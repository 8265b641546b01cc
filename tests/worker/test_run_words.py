"""``torchscope run`` keeps the program's words (issue "Every word on screen is right"): a
``SystemExit`` message is shown, a traceback once and with the program's own frames only; the
profiler's chatter on the worker's stderr stays out of the user's way unless ``--verbose``.

The programs are ``tests/fixtures/workspace/run_words``, run through the real CLI.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import torchscope as torchscope_package
from tests.conftest import FIXTURES
from tests.worker.test_run import FAST, torchscope

WORDS = FIXTURES / "run_words"
PACKAGE = str(Path(torchscope_package.__file__).resolve().parent)


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    return Path(shutil.copytree(WORDS, tmp_path / "run_words"))


def _no_torchscope_frames(text: str) -> None:
    """No frame of torchscope's package (wherever the checkout is: a fresh clone's folder may
    itself be named ``torchscope``) nor of the interpreter's runners."""
    frames = [line for line in text.splitlines() if line.strip().startswith('File "')]
    assert frames, text
    assert not [f for f in frames if PACKAGE in f or "runpy" in f or "run_entry.py" in f], text
    assert "exec(code" not in text, text


def test_a_system_exit_message_is_shown(programs: Path) -> None:
    run = torchscope(
        programs, "run", "--target", "model.py::scale", "--", "python", "config_error.py"
    )
    assert run.returncode == 1
    assert "config error: missing dataset" in run.stderr, run.stderr
    assert "exit code 1 (config error: missing dataset) before calling scale" in run.stderr
    assert run.stderr.count("config error: missing dataset") == 1, run.stderr


def test_a_traceback_is_shown_once_with_the_programs_frames(programs: Path) -> None:
    run = torchscope(programs, "run", "--target", "model.py::scale", "--", "python", "bad_shape.py")
    assert run.returncode == 1
    assert "(ValueError: bad shape 3x4) before calling scale" in run.stderr, run.stderr
    assert run.stderr.count("Traceback") == 1, run.stderr
    assert 'bad_shape.py", line 8, in <module>' in run.stderr
    assert 'bad_shape.py", line 5, in load' in run.stderr
    assert "its last stderr lines" not in run.stderr  # nothing they would add
    _no_torchscope_frames(run.stderr)


def test_the_profilers_chatter_stays_in_the_log(programs: Path, trace_dir: Path) -> None:
    """torch's own USDT lines (printed on every profile here) and one written to fd 2 by the
    profiled function itself, as the C++ side writes them, go through the real worker-stderr
    path: not on the CLI's stderr, and on it with ``--verbose``."""
    spec = ["profile", "model.py::chatty", "--call", "chatty(1.0)", *FAST]
    quiet = torchscope(programs, *spec, "--trace-dir", str(trace_dir))
    assert quiet.returncode == 0, quiet.stderr
    assert "USDT:" not in quiet.stderr and "profiler_start" not in quiet.stderr, quiet.stderr
    loud = torchscope(programs, *spec, "--trace-dir", str(trace_dir), "--verbose")
    assert loud.returncode == 0, loud.stderr
    assert "SyncActivityProfilerHandler.cpp:52] profiler_start" in loud.stderr, loud.stderr


def test_a_failure_after_the_profile_is_told_once(programs: Path, trace_dir: Path) -> None:
    run = torchscope(
        programs, "run", "--target", "model.py::scale", "--calls", "2", "--let-finish",
        "--trace-dir", str(trace_dir), *FAST, "--", "python", "fails_after.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "run: `python fails_after.py` failed (exit code 1): OSError: disk full" in run.stdout
    shown = run.stdout + run.stderr
    assert shown.count("Traceback") == 1 and 'fails_after.py", line 8, in save' in shown, shown
    _no_torchscope_frames(shown)
