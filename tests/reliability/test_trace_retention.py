"""Traces stay where we said (issue "Every word on screen is right"): the trace folder keeps
traces by age and total size (``host/trace_store.py``'s ``Retention``), not the newest 20; the
newest trace and a store's own recent ones survive; ``torchscope analyze`` of a trace retention
removed says so and names the setting, where one that never existed says to check the path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from torchscope.host.trace_store import (
    DAYS_ENV,
    REMOVED_LOG,
    TRACE_SUFFIX,
    Retention,
    TraceStore,
    default_trace_dir,
    removed_note,
)

DAY = 86400.0


def _trace(folder: Path, name: str, age_s: float, size: int = 100) -> Path:
    path = folder / f"{name}{TRACE_SUFFIX}"
    path.write_bytes(b"\0" * size)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_old_traces_go_by_age_and_the_newest_survives(tmp_path: Path) -> None:
    store = TraceStore(tmp_path, retention=Retention(days=7, gb=2))
    old = [_trace(tmp_path, f"old{i}", (8 + i) * DAY) for i in range(25)]
    recent = [_trace(tmp_path, f"recent{i}", i * 3600 + 60) for i in range(25)]
    removed = store.prune()
    assert sorted(removed) == sorted(old)
    assert all(p.exists() for p in recent)  # 25 recent traces: more than 20, all kept
    # Everything old: the newest one stays all the same.
    lone = TraceStore(tmp_path / "lone", retention=Retention(days=1, gb=2))
    (tmp_path / "lone").mkdir()
    stale = [_trace(tmp_path / "lone", f"t{i}", (30 + i) * DAY) for i in range(3)]
    lone.prune()
    assert [p.exists() for p in stale] == [True, False, False]


def test_old_traces_go_by_total_size_and_the_newest_survives(tmp_path: Path) -> None:
    store = TraceStore(tmp_path, retention=Retention(days=7, gb=2500 / (1 << 30)))
    made = [_trace(tmp_path, f"t{i}", (10 - i) * 60, size=1000) for i in range(10)]  # t9 newest
    store.prune()
    assert [p.name.split(".")[0] for p in made if p.exists()] == ["t8", "t9"]
    lines = (tmp_path / REMOVED_LOG).read_text().splitlines()
    assert len(lines) == 8 and lines[0].endswith(f"\t{made[7]}")
    huge = TraceStore(tmp_path / "huge", retention=Retention(days=7, gb=1 / (1 << 30)))
    (tmp_path / "huge").mkdir()
    only = _trace(tmp_path / "huge", "only", 60, size=5000)
    huge.prune()
    assert only.exists()  # over the size on its own, and still kept: it is the newest


def test_a_job_never_removes_the_traces_it_just_wrote(tmp_path: Path) -> None:
    """A sweep takes three paths from one store; the folder is over its size all along."""
    store = TraceStore(tmp_path, retention=Retention(days=7, gb=1 / (1 << 30)))
    points = []
    for size in (64, 256, 1024):
        path = store.new_path("model.py", f"fn_{size}")
        path.write_bytes(b"\0" * 500)
        points.append(path)
        time.sleep(0.01)
    other = _trace(tmp_path, "other", 30 * DAY)
    store.prune()
    assert all(p.exists() for p in points) and not other.exists()


def test_retention_from_the_environment() -> None:
    assert Retention.from_env({}) == Retention(7, 2)
    chosen = {DAYS_ENV: "30", "TORCHSCOPE_TRACE_KEEP_GB": "0.5"}
    assert Retention.from_env(chosen) == Retention(30, 0.5)
    assert Retention.from_env({DAYS_ENV: "soon"}) == Retention(7, 2)


def test_the_default_folder_is_one_per_workspace(tmp_path: Path) -> None:
    first, second = default_trace_dir(str(tmp_path / "a")), default_trace_dir(str(tmp_path / "b"))
    assert first != second and first.parent == second.parent
    assert first.name.startswith("a-") and default_trace_dir(str(tmp_path / "a")) == first


def _analyze(path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "server")}
    command = [sys.executable, "-m", "torchscope", "analyze", str(path)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_analyze_of_a_trace_retention_removed_names_the_setting(tmp_path: Path) -> None:
    gone = _trace(tmp_path, "model.fn.20260101-000000-000.1", 30 * DAY)
    _trace(tmp_path, "model.fn.20261201-000000-000.1", 60)
    assert TraceStore(tmp_path).prune() == [gone] and not gone.exists()
    assert "by trace retention" in removed_note(str(gone))
    done = _analyze(gone)
    assert done.returncode != 0
    assert "removed on " in done.stderr and "by trace retention" in done.stderr, done.stderr
    assert DAYS_ENV in done.stderr and "torchscope.keepTracesDays" in done.stderr
    never = _analyze(tmp_path / f"never{TRACE_SUFFIX}")
    assert "no such file; check the path" in never.stderr and DAYS_ENV not in never.stderr


def test_the_editor_settings_choose_the_retention(monkeypatch: pytest.MonkeyPatch) -> None:
    """``torchscope.keepTracesDays`` / ``keepTracesGB`` reach the server as
    ``keep_traces_days`` / ``keep_traces_gb``; unset, the environment's (else 7 days, 2 GB)."""
    from torchscope.lsp.settings import Settings, SettingsError

    chosen = Settings().updated({"keep_traces_days": 30, "keep_traces_gb": 0.5})
    assert chosen.retention == Retention(30, 0.5)
    monkeypatch.setenv(DAYS_ENV, "3")
    assert Settings().retention == Retention(3, 2)
    with pytest.raises(SettingsError, match="keep_traces_days"):
        Settings().updated({"keep_traces_days": 0})


def test_a_profile_keeps_its_own_trace_and_removes_an_old_one(tmp_path: Path) -> None:
    """The real CLI, with a folder over a tiny size budget: an old trace goes (and is
    recorded), the newest stays, and so does the trace the job just produced — the path it
    prints."""
    traces = tmp_path / "traces"
    traces.mkdir()
    old = _trace(traces, "model.fn.20260101-000000-000.1", 30 * DAY)
    newest = _trace(traces, "model.fn.20260102-000000-000.1", 29 * DAY)  # the newest so far
    (tmp_path / "model.py").write_text("def fn(x):\n    return x * 2\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), "OMP_NUM_THREADS": "1"}
    env["TORCHSCOPE_TRACE_KEEP_GB"] = str(1 / (1 << 30))
    done = subprocess.run(
        [sys.executable, "-m", "torchscope", "profile", "model.py::fn", "--call", "fn(2.0)",
         "--json", "--trace-dir", str(traces), "--steps", "2", "--warmup", "1",
         "--timing-budget", "0.3"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    produced = Path(json.loads(done.stdout)["trace_path"])
    assert produced.is_file() and produced.parent == traces
    assert not old.exists() and str(old) in (traces / REMOVED_LOG).read_text()
    assert newest.exists()  # the newest trace was kept: it goes at the next job, not this one


def test_folders_of_rank_traces_go_by_the_same_retention(tmp_path: Path) -> None:
    store = TraceStore(tmp_path, retention=Retention(days=7, gb=2))
    old = tmp_path / "model.fn.20260101-000000-000.1.ranks"
    old.mkdir()
    (old / "rank0.json.gz").write_bytes(b"\0" * 100)
    then = time.time() - 30 * DAY
    os.utime(old, (then, then))
    recent = [_trace(tmp_path, f"t{i}", 60 * (i + 1)) for i in range(2)]
    assert store.prune() == [old] and all(p.exists() for p in recent)
    assert "by trace retention" in removed_note(str(old))
