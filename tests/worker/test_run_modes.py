"""``torchscope run`` says which calls it profiled and lets the user choose (issue 40), on the
team's nanoGPT-shaped ``train.py`` (``tests/fixtures/workspace/nanogpt``): ``estimate_loss``'s
evaluation calls (``model.eval()``, no grad) come first, then the training steps."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES
from tests.worker.test_run import FAST, torchscope

NANOGPT = FIXTURES / "nanogpt"


def run_json(tmp_path: Path, *extra: str) -> dict[str, Any]:
    folder = Path(shutil.copytree(NANOGPT, tmp_path / "nanogpt"))
    done = torchscope(
        folder,
        "run",
        "--target",
        "model.py::CausalSelfAttention.forward",
        "--calls",
        "3",
        *FAST,
        "--json",
        "-q",
        *extra,
        "--",
        "python",
        "train.py",
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_run_lists_its_calls_and_says_the_training_calls_differ(tmp_path: Path) -> None:
    run = run_json(tmp_path)["run"]
    calls = run["calls"]
    assert len(calls) == 3 and run["mode"] == "any"
    for call in calls:
        assert set(call) == {"us", "training", "grad_enabled", "caller", "faults", "shapes"}
        assert call["training"] is False and call["grad_enabled"] is False
        assert call["caller"] == "estimate_loss (train.py:27)" and call["us"] > 0
    # The run went on a little to time the training steps that followed.
    assert run["other_calls"] and all(c["training"] for c in run["other_calls"])
    assert {c["caller"] for c in run["other_calls"]} == {"<module> (train.py:36)"}
    note = run["mode_note"]
    assert re.fullmatch(
        r"profiled 3 eval calls \(no grad\) from estimate_loss; the training calls from "
        r"train\.py:36 took .+: --mode train",
        note,
    ), note


def test_mode_train_profiles_the_training_calls(tmp_path: Path) -> None:
    data = run_json(tmp_path, "--mode", "train")
    run = data["run"]
    assert run["mode"] == "train" and len(run["calls"]) == 3
    for call in run["calls"]:
        assert call["training"] is True and call["grad_enabled"] is True
        assert call["caller"] == "<module> (train.py:36)"
    # The eval calls before them were seen, timed for the comparison, not profiled.
    assert all(c["caller"] == "estimate_loss (train.py:27)" for c in run["other_calls"])
    assert run["calls_seen"] > 3
    assert data["verdict"]["id"]
