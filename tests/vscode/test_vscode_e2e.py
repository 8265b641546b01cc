"""The VS Code extension end to end, in a real VS Code (code-server in headless Chromium).

Steps: install the prerequisites once into a cache outside the repository
(``scripts/vscode/ensure-code-server.sh``: Chromium, Node 24, code-server), build the ``.vsix``
(``npm run package``; skipped when ``build/torchscope.vsix`` is newer than every input, as
after ``scripts/setup.sh``), then run the Playwright driver ``tests/vscode/e2e.mjs``, which installs
the ``.vsix`` into code-server, right-clicks inside ``fn`` of a copy of ``examples/``, chooses
**Profile this function**, and checks the Problems panel, the inlay hint and the hover, then
the **Profile memory** lens and its memory inlay hint.
Screenshots and logs go to ``test-output/vscode/``.

Set ``TORCHSCOPE_SKIP_VSCODE=1`` to skip it (the only way it skips);
``TORCHSCOPE_E2E_HOT_LINES=0`` drops the inlay-hint, hover and Open-trace-lens checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from torchscope.analysis.results import VERDICT_IDS
from torchscope.analysis.verdict.causes import CAUSES

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "test-output" / "vscode"

pytestmark = pytest.mark.vscode


def _run(cmd: list[str], timeout: float, what: str) -> None:
    print(f"$ {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=REPO, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} took longer than {timeout:.0f} s")
    print(f"  ({what}: {time.monotonic() - t0:.1f} s)", flush=True)
    if proc.returncode != 0:
        pytest.fail(f"{what} failed with exit code {proc.returncode}")


def _npm_install_needed() -> bool:
    marker = REPO / "node_modules" / ".package-lock.json"
    lock = REPO / "package-lock.json"
    return not marker.exists() or marker.stat().st_mtime < lock.stat().st_mtime


#: What ``npm run package`` builds the ``.vsix`` from (its outputs, ``extension/out`` and
#: ``extension/bundled``, are not inputs).
VSIX = REPO / "build" / "torchscope.vsix"
VSIX_INPUTS = ("extension", "server/torchscope", "scripts/vscode")
VSIX_INPUT_FILES = ("package.json", "package-lock.json", "pyproject.toml", ".vscodeignore")
VSIX_OUTPUTS = (REPO / "extension" / "out", REPO / "extension" / "bundled")


def _vsix_outdated() -> bool:
    """No ``.vsix``, or an input changed since it was built. ``scripts/setup.sh`` (so
    ``.ci/run``) has just packaged it: building it again is the same ~100 s twice."""
    if not VSIX.exists():
        return True
    built = VSIX.stat().st_mtime
    files = [REPO / name for name in VSIX_INPUT_FILES]
    for folder in VSIX_INPUTS:
        files += [
            p
            for p in (REPO / folder).rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and not any(p.is_relative_to(out) for out in VSIX_OUTPUTS)
        ]
    return any(p.stat().st_mtime > built for p in files if p.exists())


def _processes_under(folder: Path) -> list[tuple[int, str]]:
    """Processes whose command line or working directory lies under ``folder``."""
    found = []
    needle = str(folder)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if needle in cmdline or cwd.startswith(needle):
            found.append((int(entry.name), cmdline.strip()[:200]))
    return found


def _kill_leftovers() -> list[tuple[int, str]]:
    """Kill what the driver left running (it should have stopped everything itself)."""
    pgid_file = OUT / "code-server.pgid"
    if pgid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
            os.killpg(int(pgid_file.read_text().strip()), signal.SIGKILL)
    leftovers = _processes_under(OUT)
    for pid, _ in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return leftovers


def _driver(timeout: float) -> dict[str, Any]:
    cmd = ["node", "tests/vscode/e2e.mjs", "--vsix", str(VSIX.relative_to(REPO)), "--out", str(OUT)]
    print(f"$ {' '.join(cmd)}", flush=True)
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        pytest.fail(f"the e2e driver ran longer than {timeout:.0f} s; see {OUT}")
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        pytest.fail(f"the e2e driver printed no result (exit {proc.returncode}); see {OUT}/e2e.log")
    result: dict[str, Any] = json.loads(lines[-1])
    result["exit_code"] = proc.returncode
    return result


def _script_seconds() -> float:
    """The baseline of issue 16's first-click target: the hand-written torch.profiler script
    of bench/lsp_roundtrip.py (import torch, profile 5 steps of the example, print the table)."""
    sys.path.insert(0, str(REPO / "bench"))
    from lsp_roundtrip import BASELINE  # type: ignore[import-not-found]

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "baseline.py"
        script.write_text(BASELINE.replace("{n}", "64"))
        t0 = time.monotonic()
        subprocess.run([sys.executable, str(script)], check=True, capture_output=True)
        return time.monotonic() - t0


def _report_first_click(marks: dict[str, Any]) -> None:
    """Issue 16's first click against the hand-written script; printed and written to
    ``first-click.json`` for bench/run_all.py, not asserted (a speed target is a measured
    ratio, not a timed test). The ratio is right-click → diagnostic once
    the prestarted worker is ready; window open → worker ready is VS Code loading plus the
    prestart, which happen while the user opens the file, and is printed beside it."""
    click = (marks["diagnostic"] - marks["rightClick"]) / 1000
    ready = marks.get("workerReady")
    startup = (ready - marks["windowOpen"]) / 1000 if ready else None
    script = _script_seconds()
    before = f"window open → worker ready {startup:.2f} s; " if startup is not None else ""
    # The diagnostic mark is its squiggle appearing in the editor; the menu part (right-click
    # until the command is chosen) and the harness's own Problems-panel check are printed too.
    menu = (marks["commandChosen"] - marks["rightClick"]) / 1000
    panel = (marks["problemsPanel"] - marks["rightClick"]) / 1000
    (OUT / "first-click.json").write_text(
        json.dumps(
            {
                "click_s": click,
                "script_s": script,
                "menu_s": menu,
                "problems_panel_s": panel,
                "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
        )
    )
    print(
        f"first click: {before}right-click → diagnostic {click:.2f} s (of it the context menu "
        f"{menu:.2f} s; the Problems panel row showed at {panel:.2f} s); hand-written script "
        f"{script:.2f} s; ratio {click / script:.2f}× "
        f"(target ≤ 0.3×: {'pass' if click / script <= 0.3 else 'FAIL'})"
    )


# First run on a fresh machine: apt (Chromium) + code-server's native build take minutes.
@pytest.mark.timeout(2400)
def test_profile_this_function_in_vscode() -> None:
    if os.environ.get("TORCHSCOPE_SKIP_VSCODE") == "1":
        pytest.skip("TORCHSCOPE_SKIP_VSCODE=1: the VS Code end-to-end test is disabled")
    for tool in ("npm", "node", "bash"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} not found: the VS Code end-to-end test needs Node 20+ and npm "
                "(or set TORCHSCOPE_SKIP_VSCODE=1 to skip it)"
            )

    _run(
        ["bash", "scripts/vscode/ensure-code-server.sh"],
        1800,
        "installing code-server and Chromium",
    )
    if _npm_install_needed():
        _run(["npm", "ci", "--no-audit", "--no-fund"], 900, "npm ci")
    if _vsix_outdated():
        _run(["npm", "run", "package"], 600, "building the .vsix")
    else:
        print(f"  ({VSIX.relative_to(REPO)} is newer than its inputs: not built again)")

    try:
        result = _driver(timeout=float(os.environ.get("TORCHSCOPE_E2E_TIMEOUT_S", "600")) + 60)
    finally:
        leftovers = _kill_leftovers()

    for s in result.get("steps", []):
        print(
            f"  {s['seconds']:6.1f} s  {s['name']}{'  FAILED: ' + s['error'] if 'error' in s else ''}"
        )
    print(f"checks: {json.dumps(result.get('checks', {}), ensure_ascii=False)}")
    print(f"screenshots: {', '.join(result.get('screenshots', []))}")

    assert result["ok"] and result["exit_code"] == 0, (
        f"VS Code e2e failed: {result.get('error')}\n(screenshots and logs in {OUT})"
    )
    assert not leftovers, f"the driver left processes running: {leftovers}"
    _report_first_click(result["firstClick"])
    checks = result["checks"]
    assert any(v in checks["problemsRow"] for v in VERDICT_IDS), checks["problemsRow"]
    # The def-line diagnostic names the verdict's cause (issue 30), as the Problems panel shows.
    cause = checks["problemsRow"].split(" · cause: ")[-1].split(" ")[0]
    assert " · cause: " in checks["problemsRow"] and cause in CAUSES, checks["problemsRow"]
    # Edited in the editor, then Compare with last commit: the verdict against HEAD.
    assert "faster than HEAD" in checks["diff"], checks["diff"]
    # The measured line, then what the trial checked and what the fix assumes (issue 39).
    fix = r"measured .* faster \([\d.]+×–[\d.]+× faster\), same outputs.* · checked: outputs.* · assumes: .*"
    assert re.fullmatch(fix, checks["fix"]), checks
    # Profile this function in a run… (launch.json), then the captured-inputs lens replays it.
    for verdict in checks["profileInRun"].values():
        assert verdict.split(" ")[0] in VERDICT_IDS, checks["profileInRun"]
    # Profile memory: the lens runs the memory pass and the allocating line gets `+N MB · k alloc`.
    assert re.fullmatch(r"\+\d[\d.]* [kMG]?B · \d+ allocs?", checks["memoryHint"]), checks
    if result.get("hotLinesChecked"):
        assert checks.get("inlayHint"), "no inlay hint text"
        assert "aten::mm" in checks.get("hover", "")
        # The README's screenshot comes from this run: written under the test output, and to
        # docs/images/vscode-profile.png with TORCHSCOPE_UPDATE_SCREENSHOTS=1.
        shot = REPO / checks.get("docsScreenshot", "missing")
        assert shot.name == "vscode-profile.png" and shot.stat().st_size > 10_000, checks
        # Open trace: a Perfetto panel whose UI (a local stub) received the whole trace file.
        opened = checks["openTrace"]
        assert opened["received"] == opened["size"] > 0, opened
        assert opened["title"].startswith("Perfetto: matmul_add.fn · "), opened
        assert checks["openTraceInBrowser"]["outcome"], checks["openTraceInBrowser"]
        # Profile compiled (issue 42): the hot line's hover has its compiled kernel's time.
        compiled = checks["compiledLine"]
        assert re.search(r"line \d+: eager [\d.]+ [µm]?s → compiled [\d.]+ [µm]?s", compiled), compiled
