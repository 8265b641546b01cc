"""A file as it was at a git revision, and the revision a CI check compares against.

Only ``git`` itself is run (``git show REV:path``, ``git merge-base``); every failure is a
``GitError`` whose message names the problem and the fix.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Optional

GIT_TIMEOUT_S = 30.0


class GitError(Exception):
    """git cannot give what was asked (no repository, unknown revision, file not there)."""


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed (or not on PATH): install git to compare") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {' '.join(args)} did not answer within {GIT_TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        raise GitError(done.stderr.strip() or f"git {' '.join(args)} failed")
    return done.stdout


def repo_root(path: Path) -> Path:
    folder = path if path.is_dir() else path.parent
    try:
        return Path(_git(folder, "rev-parse", "--show-toplevel").strip())
    except GitError as exc:
        raise GitError(
            f"{path} is not inside a git repository ({exc}): compare needs the file's history"
        ) from exc


def source_at(file: Path, rev: str) -> str:
    """The text of ``file`` at ``rev`` (``git show REV:path``)."""
    file = file.resolve()
    root = repo_root(file)
    rel = file.relative_to(root.resolve()).as_posix()
    try:
        _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except GitError:
        raise GitError(
            f"{rev!r} is not a revision of the repository at {root}: give a commit, branch or "
            "tag (e.g. HEAD, HEAD~1, main)"
        ) from None
    try:
        return _git(root, "show", f"{rev}:{rel}")
    except GitError as exc:
        raise GitError(
            f"{rel} does not exist at {rev} ({exc}): it is new since then, or was moved — "
            "compare with a revision that has it"
        ) from exc


def default_base(folder: Path, env: Optional[dict[str, str]] = None) -> str:
    """The revision a CI check compares with: the merge base of HEAD with
    ``origin/$GITHUB_BASE_REF`` (a pull request on GitHub Actions) or with ``main``."""
    env = dict(os.environ) if env is None else env
    base_ref = env.get("GITHUB_BASE_REF", "").strip()
    candidates = [f"origin/{base_ref}", base_ref] if base_ref else ["main", "origin/main"]
    errors = []
    for ref in candidates:
        try:
            return _git(folder, "merge-base", "HEAD", ref).strip()
        except GitError as exc:
            errors.append(f"{ref}: {exc}")
    raise GitError(
        "cannot find the base revision to compare with ("
        + "; ".join(errors)
        + '): set base = "<rev>" in [tool.torchscope.check] or pass --base'
    )
