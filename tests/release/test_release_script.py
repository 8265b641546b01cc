"""``scripts/release.sh VERSION`` on a throwaway clone (never this checkout): it bumps the one
version in every file that carries it, gives the changelog's entries the version's heading,
commits and tags ``vVERSION``; it refuses a dirty tree and a version already tagged. The
artefacts it builds are checked by test_artefacts.py (``--build-only`` runs that)."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

ENV = {
    **os.environ,
    "PYTHON": sys.executable,
    "GIT_AUTHOR_NAME": "release test",
    "GIT_AUTHOR_EMAIL": "release@test",
    "GIT_COMMITTER_NAME": "release test",
    "GIT_COMMITTER_EMAIL": "release@test",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def _release(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/release.sh", *args], cwd=clone, env=ENV,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_release_bumps_every_file_and_tags_a_clone(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    before = (clone / "CHANGELOG.md").read_text()
    unreleased = before.split("## [Unreleased]\n", 1)[1].split("\n## [", 1)[0].strip()
    done = _release(clone, "9.8.7", "--no-build")
    assert done.returncode == 0, done.stderr

    assert re.search(r'^version = "9\.8\.7"$', (clone / "pyproject.toml").read_text(), re.M)
    assert json.loads((clone / "package.json").read_text())["version"] == "9.8.7"
    lock = json.loads((clone / "package-lock.json").read_text())
    assert lock["version"] == lock["packages"][""]["version"] == "9.8.7"
    version_py = (clone / "server" / "torchscope" / "_version.py").read_text()
    assert '__version__ = "9.8.7"' in version_py
    changelog = (clone / "CHANGELOG.md").read_text()
    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    assert f"## [Unreleased]\n\n## [9.8.7] - {today}\n" in changelog
    moved = changelog.split(f"## [9.8.7] - {today}\n", 1)[1].split("\n## [", 1)[0].strip()
    assert moved == unreleased  # the entries now under the version's heading

    assert _git(clone, "tag", "-l") == "v9.8.7"
    assert _git(clone, "rev-parse", "v9.8.7^{commit}") == _git(clone, "rev-parse", "HEAD")
    assert _git(clone, "log", "-1", "--format=%s") == "Release 9.8.7"
    assert _git(clone, "status", "--porcelain", "--untracked-files=no") == ""
    assert "v9.8.7" not in _git(REPO, "tag", "-l")  # this checkout untouched

    again = _release(clone, "9.8.7", "--no-build")
    assert again.returncode == 2 and "tag v9.8.7 exists" in again.stderr
    (clone / "README.md").write_text("changed\n")
    dirty = _release(clone, "9.8.8", "--no-build")
    assert dirty.returncode == 2 and "commit them first" in dirty.stderr
    bad = _release(clone, "next", "--no-build")
    assert bad.returncode == 2 and "give a version" in bad.stderr
