"""Captures are data (issue 49): one shipped in a repository that would run code is refused
with a message naming it, and runs nothing; one this user's torchscope wrote (a module as an
argument: more than data) replays, because its HMAC checks out with the user's key; the same
file changed afterwards is refused. Captures are 0600 in 0700 folders, the key 0600 in the
user's state folder. The real CLI, the real worker, real ``torch.save`` files."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from tests.reliability.conftest import ENV, TORCHSCOPE

MODEL = """\
import torch


def apply(net, x):
    return net(x)


if __name__ == "__main__":
    apply(torch.nn.Linear(4, 4), torch.ones(2, 4))
"""

CRAFT = """\
import os, sys, torch

class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))

torch.save({"format": 1, "qualname": "apply", "args": (Payload(), 1), "kwargs": {},
            "main_file": "", "captured_at": 0.0}, sys.argv[1])
"""


def _run(cwd: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TORCHSCOPE, *args],
        cwd=cwd,
        env={**ENV, "XDG_STATE_HOME": str(state), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


FAST = ("-q", "--steps", "1", "--warmup", "1")


def test_a_shipped_capture_that_would_run_code_is_refused(tmp_path: Path) -> None:
    work, state = tmp_path / "repo", tmp_path / "state"
    work.mkdir()
    (work / "model.py").write_text(MODEL)
    capture = work / ".torchscope" / "inputs" / "model" / "apply.pt"
    capture.parent.mkdir(parents=True)
    written = tmp_path / "written-by-the-capture"
    subprocess.run([*TORCHSCOPE[:1], "-c", CRAFT, str(capture), str(written)], check=True,
                   env=ENV, timeout=120)  # fmt: skip
    done = _run(work, state, "profile", "model.py::apply", "--trace-dir", str(tmp_path / "t"),
                *FAST)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert not written.exists(), "loading the capture ran its code"
    assert f"the capture {capture} was refused" in done.stderr, done.stderr
    assert "(posix.system)" in done.stderr and "torchscope run --capture" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_capture_of_ours_replays_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    work, state = tmp_path / "repo", tmp_path / "state"
    work.mkdir()
    (work / "model.py").write_text(MODEL)
    traces = str(tmp_path / "t")
    ran = _run(work, state, "run", "--target", "model.py::apply", "--capture", "--calls", "1",
               "--trace-dir", traces, *FAST, "--", "python", "model.py")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    capture = work / ".torchscope" / "inputs" / "model" / "apply.pt"
    key = state / "torchscope" / "capture.key"
    assert _mode(capture) == 0o600 and _mode(Path(f"{capture}.sig")) == 0o600
    made = [work / ".torchscope", capture.parent.parent, capture.parent]
    assert [_mode(p) for p in made] == [0o700] * 3
    assert _mode(key) == 0o600 and _mode(key.parent) == 0o700
    replay = _run(work, state, "profile", "model.py::apply", "--trace-dir", traces, "--json",
                  *FAST)  # fmt: skip
    assert replay.returncode == 0, replay.stderr  # a Linear as an argument: signed, so loaded
    assert '"source": "capture"' in replay.stdout
    with open(capture, "ab") as out:
        out.write(b"\0")  # changed since it was signed
    changed = _run(work, state, "profile", "model.py::apply", "--trace-dir", traces, *FAST)
    assert changed.returncode == 1
    assert "was refused" in changed.stderr and "torch.nn.modules.linear" in changed.stderr, (
        changed.stderr
    )
    os.truncate(capture, capture.stat().st_size - 1)  # as signed again, but another user's key:
    other = _run(work, tmp_path / "another-key", "profile", "model.py::apply", "--trace-dir",
                 traces, *FAST)  # fmt: skip
    assert other.returncode == 1 and "was refused" in other.stderr
