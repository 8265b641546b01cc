"""Every command that compares two things shows the A/B engine's ``comparison`` object, and a
core held by another process makes it say ``inconclusive`` or name the load, never the
opposite of the quiet answer (issue 54). The real CLI in real processes on real torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, REPO
from tests.core_holder import core_held
from tests.unit.test_ab_engine import CONTRACT
from tests.worker.test_diff import MM, MM_TWICE, make_repo

pytestmark = pytest.mark.slow

OPPOSITE = {"faster": "slower", "slower": "faster"}

# Bimodal on purpose: each call sleeps 1 ms or 4 ms (a choice from the OS's entropy, so the two
# sides do not pair up), so the median of either side flips between the two and the rounds of
# a short budget cannot decide.
NOISY = (
    "import random\nimport time\n\n_R = random.Random()\n\n\n# torchscope: fn()\n"
    "def fn():\n    time.sleep(_R.choice((0.001, 0.004)))\n"
)


def _run(*args: str, cwd: Path, threads: int = 1) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), "OMP_NUM_THREADS": str(threads)}
    return subprocess.run(
        [sys.executable, "-m", "torchscope", *args, "-q"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _holds_the_contract(c: dict[str, Any]) -> None:
    assert set(c) >= CONTRACT, c
    low, high = c["interval"]
    assert low <= c["ratio"] <= high and 0 <= c["dropped_rounds"] <= c["rounds"]
    assert set(c["spread"]) == {"before", "after"}
    assert c["phrase"].count("(") <= 1
    for word in ("faster", "slower"):  # one phrase per direction, only when decided
        assert (word in c["phrase"]) == (c["decision"] == word), c


def _names_the_load(c: dict[str, Any]) -> bool:
    return c["decision"] == "inconclusive" or "busy" in c["reason"] or "dropped" in c["reason"]


def test_diff_json_and_text_show_the_comparison(tmp_path: Path) -> None:
    file = make_repo(tmp_path / "repo", MM, MM_TWICE)
    done = _run("diff", "mod.py::fn", "--json", "--timing-budget", "0.5", cwd=file.parent)
    assert done.returncode == 0, done.stderr
    diff = json.loads(done.stdout)["diff"]
    c = diff["comparison"]
    _holds_the_contract(c)
    assert c["decision"] == diff["verdict"]["id"] == "slower", c
    assert c["phrase"] in diff["verdict"]["headline"]
    assert c["busy_share"] is not None and diff["machine"]["cores"] >= 1  # measured, as profile
    text = _run("diff", "mod.py::fn", "--timing-budget", "0.5", cwd=file.parent)
    assert "comparison: slower: " in text.stdout, text.stdout


def test_check_exits_3_when_it_cannot_decide_and_0_when_allowed(tmp_path: Path) -> None:
    file = make_repo(tmp_path / "repo", NOISY, NOISY.replace("def fn", "# same\ndef fn"))
    repo = file.parent
    (repo / "pyproject.toml").write_text(
        '[tool.torchscope.check]\nbase = "HEAD"\nfunctions = ["mod.py::fn"]\n'
    )
    done = _run("check", "--timing-budget", "0.3", "--json", cwd=repo)
    [row] = json.loads(done.stdout)["check"]
    _holds_the_contract(row["comparison"])
    assert row["comparison"]["decision"] == "inconclusive", row["comparison"]
    assert row["status"] == "inconclusive" and done.returncode == 3, done.stderr
    suite = ET.parse(repo / "torchscope-check.xml").getroot()
    assert (suite.get("failures"), suite.get("skipped")) == ("0", "1")
    allowed = _run("check", "--timing-budget", "0.3", "--allow-inconclusive", cwd=repo)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "| ❔ | `mod.py::fn` |" in allowed.stdout


def test_diff_with_a_core_held_never_says_the_opposite(tmp_path: Path) -> None:
    """Two intra-op threads: under a held core one of them waits, and the GEMMs slow down by
    the load, not the edit."""
    file = make_repo(tmp_path / "repo", MM, MM_TWICE)
    args = ("diff", "mod.py::fn", "--json", "--timing-budget", "0.5")
    quiet = json.loads(_run(*args, cwd=file.parent, threads=2).stdout)["diff"]["comparison"]
    with core_held():
        held = json.loads(_run(*args, cwd=file.parent, threads=2).stdout)["diff"]["comparison"]
    _holds_the_contract(held)
    assert held["decision"] != OPPOSITE.get(quiet["decision"]), (quiet, held)
    assert held["decision"] == quiet["decision"] or _names_the_load(held), (quiet, held)
    assert held["busy_share"] is not None and held["busy_share"] > 0.2, held


def test_fix_try_with_a_core_held_never_says_the_opposite(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(FIXTURES / "fix_samples.py", work / "fix_samples.py")
    args = ("fix", "fix_samples.py::attention", "--try", "sdpa", "--device", "cpu", "--json")
    quiet = json.loads(_run(*args, cwd=work, threads=2).stdout)
    with core_held():
        held = json.loads(_run(*args, cwd=work, threads=2).stdout)
    for trial in (quiet, held):
        _holds_the_contract(trial["comparison"])
        assert trial["comparison"]["decision"] == trial["verdict"]
        assert "((" not in trial["message"] and ") (" not in trial["message"], trial["message"]
    q, h = quiet["comparison"], held["comparison"]
    assert h["decision"] != OPPOSITE.get(q["decision"]), (q, h)
    assert h["decision"] == q["decision"] or _names_the_load(h), (q, h)
