"""Write VERSION into the files that carry torchscope's version, and CHANGELOG.md's heading.

    python scripts/release/bump.py VERSION DATE

pyproject.toml's ``version``, package.json's and package-lock.json's (the lock repeats the
root package's), ``server/torchscope/_version.py``; in CHANGELOG.md the ``## [Unreleased]``
heading stays (empty) and ``## [VERSION] - DATE`` goes under it, taking its entries.
tests/unit/test_release_metadata.py holds the files equal.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _sub(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    new, count = re.subn(pattern, replacement, text, count=1, flags=re.M)
    if count != 1:
        raise SystemExit(f"bump: {path.name}: no match for {pattern!r}")
    path.write_text(new)


def _json(path: Path, version: str, *, lock: bool) -> None:
    data = json.loads(path.read_text())
    data["version"] = version
    if lock:
        data["packages"][""]["version"] = version
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def bump(version: str, date: str) -> None:
    _sub(REPO / "pyproject.toml", r'^version = "[^"]+"$', f'version = "{version}"')
    _sub(REPO / "server" / "torchscope" / "_version.py", r'^__version__ = "[^"]+"$',
         f'__version__ = "{version}"')  # fmt: skip
    _json(REPO / "package.json", version, lock=False)
    _json(REPO / "package-lock.json", version, lock=True)
    _sub(
        REPO / "CHANGELOG.md", r"^## \[Unreleased\]$", f"## [Unreleased]\n\n## [{version}] - {date}"
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    bump(sys.argv[1], sys.argv[2])
