"""Where traces are written: a private folder (0700), newest N kept.

Traces can contain tensor shapes, file paths and function names, so the folder is readable by
its owner only. The daemon may be given a folder (VS Code's workspace storage); the CLI uses the
user's cache folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import Optional

DEFAULT_KEEP = 20
TRACE_SUFFIX = ".pt.trace.json.gz"


def default_trace_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchscope" / "traces"


def newest_first(folder: Path, suffix: str) -> list[Path]:
    """The files of ``folder`` named ``*suffix``, newest first; one that vanishes while they
    are listed (another process sharing the folder pruned it) is left out."""
    if not folder.is_dir():
        return []
    found: list[tuple[float, Path]] = []
    for path in folder.iterdir():
        if path.name.endswith(suffix):
            with contextlib.suppress(FileNotFoundError):
                found.append((path.stat().st_mtime, path))
    return [path for _, path in sorted(found, key=lambda item: item[0], reverse=True)]


class TraceStore:
    def __init__(self, folder: Optional[Path] = None, keep: int = DEFAULT_KEEP) -> None:
        self.folder = folder or default_trace_dir()
        self.keep = max(1, keep)

    def _ensure_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)

    def new_path(self, file: str, qualname: str) -> Path:
        """A fresh, descriptive trace path; older traces beyond ``keep`` are removed."""
        self._ensure_folder()
        self.prune(self.keep - 1)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{Path(file).stem}.{qualname}")[:80]
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
        return self.folder / f"{stem}.{stamp}.{os.getpid()}{TRACE_SUFFIX}"

    def traces(self) -> list[Path]:
        """The traces, newest first."""
        return newest_first(self.folder, TRACE_SUFFIX)

    def prune(self, keep: int) -> None:
        for old in self.traces()[max(0, keep) :]:
            with contextlib.suppress(OSError):  # already gone, or not ours to remove
                old.unlink()
