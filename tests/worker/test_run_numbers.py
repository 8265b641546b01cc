"""``torchscope run`` tells its numbers apart (issue 55), on an MNIST training script that runs
at import (``tests/fixtures/workspace/run_mnist/train_mnist.py``: the model and the loop in the
one file, as scripts are written): the callers are the script's own lines, never the
interpreter's bootstrap (``<string>``, ``_run_code``, runpy); when the timed call differs from
the program's calls beyond the noise one line says why (here: another batch size); advice about
``--mode`` names only a mode the user did not pass; a target that raises is one sentence with
its traceback."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.worker.test_run import FAST, torchscope

SCRIPT = FIXTURES / "run_mnist" / "train_mnist.py"
BOOTSTRAP = ("<string>", "_run_code", "runpy", "<frozen")


def _line(text: str) -> int:
    lines = SCRIPT.read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line == text or line.strip() == text)


TRAIN_CALL = _line("        loss = F.nll_loss(model(images), labels)")
EVAL_CALL = _line("                loss = F.nll_loss(model(images), labels)")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copy(SCRIPT, tmp_path / SCRIPT.name)
    return tmp_path


def run(folder: Path, *extra: str, program: tuple[str, ...] = ()) -> dict[str, Any]:
    done = torchscope(folder, "run", "--target", "train_mnist.py::Net.forward", *FAST, "--json",
                      "-q", *extra, "--", *(program or ("python", "train_mnist.py")))  # fmt: skip
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.mark.parametrize("entry", [("python", "train_mnist.py"), ("python", "-m", "train_mnist")])
def test_the_callers_are_the_scripts_own_lines(folder: Path, entry: tuple[str, ...]) -> None:
    data = run(folder, "--calls", "3", program=entry)
    info = data["run"]
    assert info["callers"] == [{"file": "train_mnist.py", "line": TRAIN_CALL, "calls": 3}]
    assert [c["caller"] for c in info["calls"]] == [f"<module> (train_mnist.py:{TRAIN_CALL})"] * 3
    shown = json.dumps(info)
    assert not any(word in shown for word in BOOTSTRAP), shown
    for call in info["calls"]:
        assert call["shapes"] == "[16, 1, 28, 28]" and call["faults"] >= 0


def test_another_batch_size_is_named(folder: Path) -> None:
    """The fourth call, the one timed, has the epoch's last batch of 2 images; the program's
    calls before it had 64: the line names the shapes."""
    data = run(folder, "--calls", "4", program=("python", "train_mnist.py", "--batch-size",
                                                "64", "--last-batch", "2"))  # fmt: skip
    info = data["run"]
    shapes = [c["shapes"] for c in info["calls"]]
    assert shapes == ["[64, 1, 28, 28]"] * 3 + ["[2, 1, 28, 28]"]
    note = info["timing_note"]
    timed, program = data["timing"]["median_us"], sorted(info["in_run_us"])[1]
    assert timed < program / 2  # an oracle of its own: 2 images against 64
    assert re.fullmatch(
        r"timed \S+ \S+ per call, \S+× the in-run median of \S+ \S+: other shapes: 2 of the "
        r"program's 2 calls had \[64, 1, 28, 28\], the timed call \[2, 1, 28, 28\] \(another "
        r"batch size\)",
        note,
    ), note


def test_mode_advice_names_only_a_mode_not_passed(folder: Path) -> None:
    evals = ("python", "train_mnist.py", "--eval-only")
    chosen = run(folder, "--calls", "2", "--mode", "eval", program=evals)["run"]
    assert chosen["mode"] == "eval" and "--mode" not in chosen["mode_note"], chosen["mode_note"]
    assert chosen["mode_note"].startswith("profiled 2 eval calls (no grad) from train_mnist.py")
    free = run(folder, "--calls", "2", program=evals)["run"]
    assert free["mode_note"].endswith("no training call was seen (--mode train waits for one)")


def test_a_target_that_raises_is_one_sentence_with_its_traceback(folder: Path) -> None:
    done = torchscope(folder, "run", "--target", "train_mnist.py::Net.forward", *FAST, "-q",
                      "--", "python", "train_mnist.py", "--broken")  # fmt: skip
    assert done.returncode == 1, done.stderr
    first, *rest = done.stderr.strip().splitlines()
    forward_line = _line("x = F.relu(self.fc1(x))")
    assert first == (
        f"torchscope: train_mnist.py:{forward_line}: Net.forward raised RuntimeError: mat1 and "
        "mat2 shapes cannot be multiplied (16x9216 and 100x128) on call 1 (from <module> "
        f"(train_mnist.py:{TRAIN_CALL})); the program `python train_mnist.py --broken` failed "
        "with exit code 1"
    ), first
    traceback = "\n".join(rest)
    assert traceback.count("Traceback (most recent call last)") == 1
    assert f'train_mnist.py", line {TRAIN_CALL}, in <module>' in traceback
    assert traceback.endswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x9216 "
                              "and 100x128)")  # fmt: skip
    assert "none of them" not in done.stderr and "drop --mode" not in done.stderr
