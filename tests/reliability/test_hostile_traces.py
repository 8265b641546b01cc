"""Every hostile trace (``hostile.py``) through ``torchscope analyze``, text and ``--json``:
the analysis, or one message on stderr naming the file, exit code 1 and nothing on stdout;
never a traceback. (The servers: ``test_hostile_servers.py``.)"""

from __future__ import annotations

import json
import subprocess
import sys
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


# The CLI's own main, then the process's peak RSS: VmHWM belongs to the process's memory map,
# which exec makes anew, so it is the command's own peak. (``wait4``'s ``ru_maxrss`` is not:
# Linux carries the parent's peak across fork and exec, and pytest's is hundreds of MB after a
# full run.)
_PEAK = (
    "import sys\n"
    "from torchscope.cli import main\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "finally:\n"
    "    hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
    "    print('peak-kb', hwm.split()[1], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def test_cli_gzip_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """500 MB of inflated blanks: refused once the inflation ratio shows, the command's peak
    RSS far below the inflated size."""
    from tests.reliability.hostile import gzip_bomb

    path = gzip_bomb(tmp_path / "bomb.json.gz")
    run = subprocess.run(
        [sys.executable, "-c", _PEAK, "analyze", str(path)], env=ENV, cwd=REPO,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, check=False,
    )
    stderr = run.stderr.decode()
    *said, peak = stderr.strip().splitlines()
    assert run.returncode == 1 and "a gzip bomb" in "\n".join(said), stderr
    assert peak.startswith("peak-kb ") and int(peak.split()[1]) < 250 * 1024, peak


def _small_files() -> None:
    """In the child: files of at most 256 KiB (a write beyond fails with EFBIG, as on a full
    disk, instead of killing the process with SIGXFSZ)."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))


def test_cli_no_room_for_the_args_is_one_message() -> None:
    """The args of a trace's events are set aside in a temporary file (``_native_store.c``):
    when it cannot grow, one message says where and what to do."""
    trace = REPO / "tests" / "data" / "traces" / "hta_ddp_v100_rank1.json.gz"
    run = subprocess.run(
        [*TORCHSCOPE, "analyze", str(trace)], env=ENV, cwd=REPO, capture_output=True,
        timeout=120, stdin=subprocess.DEVNULL, preexec_fn=_small_files,
    )
    stderr = run.stderr.decode()
    assert run.returncode == 1 and run.stdout == b"", stderr
    [line] = stderr.strip().splitlines()
    assert line.startswith("torchscope: ") and trace.name in line, line
    assert "no room to set the trace's args aside" in line and "TMPDIR" in line, line


@pytest.mark.parametrize("reader", ["fast", "reference"])
def test_cli_names_a_non_finite_timestamp_with_either_reader(reader: str, tmp_path: Path) -> None:
    """A trace whose only event has ``"ts": Infinity`` is told that, not that it has no event
    of a Kineto category; the same words whichever reader reads it."""
    path = tmp_path / "inf.json"
    path.write_bytes(b'{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","ts":Infinity}]}')
    env = {**ENV, **({"TORCHSCOPE_NO_NATIVE": "1"} if reader == "reference" else {})}
    run = subprocess.run(
        [*TORCHSCOPE, "analyze", str(path)],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert run.stderr == (
        f"torchscope: {path}: nothing to analyse: event 0 has a non-finite timestamp "
        "(ts: Infinity)\n"
    )
