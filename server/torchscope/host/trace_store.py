"""Where traces are written: a private folder (0700), kept by age and total size.

Traces can contain tensor shapes, file paths and function names, so the folder is readable by
its owner only. The daemon may be given a folder (VS Code's workspace storage, one per
workspace); the CLI, MCP and notebooks use the user's cache folder, one subfolder per workspace
(the working directory they run in).

Retention (:class:`Retention`): a trace older than ``days`` goes, and the oldest go while the
folder holds more than ``gb``; by default 7 days and 2 GB, whichever comes first, set with
``TORCHSCOPE_TRACE_KEEP_DAYS`` / ``TORCHSCOPE_TRACE_KEEP_GB`` (and in VS Code
``torchscope.keepTracesDays`` / ``torchscope.keepTracesGB``). The newest trace, and every trace
this store wrote in the last :data:`OWN_GRACE_S` seconds (a sweep's points, the ranks of one
job), are never removed by it, so a job never takes away the result it just produced. Each
removal is recorded in the folder's :data:`REMOVED_LOG`, so that opening a trace that is gone
can say retention removed it, and which setting keeps traces longer (:func:`removed_note`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from torchscope.files import Refused, private_folder

DEFAULT_KEEP = 20
"""Sweep charts kept (traces and folders of rank traces are kept by :class:`Retention`)."""
TRACE_SUFFIX = ".pt.trace.json.gz"
RANKS_SUFFIX = ".ranks"
"""A multi-process profile's folder: ``<file>.<function>.<time>.ranks/rank<R>.json.gz``."""
DEFAULT_DAYS = 7.0
DEFAULT_GB = 2.0
DAYS_ENV = "TORCHSCOPE_TRACE_KEEP_DAYS"
GB_ENV = "TORCHSCOPE_TRACE_KEEP_GB"
REMOVED_LOG = "removed-traces.log"
"""One line per trace retention removed: ``<unix time>\\t<path>``; its newest lines are kept."""
REMOVED_LOG_MAX_BYTES = 256 * 1024
OWN_GRACE_S = 3600.0
SETTING_HINT = (
    f"keep traces longer with {DAYS_ENV} / {GB_ENV} (in VS Code the torchscope.keepTracesDays / "
    "torchscope.keepTracesGB settings)"
)


@dataclass(frozen=True)
class Retention:
    """How long traces stay: at most ``days`` old, at most ``gb`` gigabytes together."""

    days: float = DEFAULT_DAYS
    gb: float = DEFAULT_GB

    @classmethod
    def from_env(cls, environ: Optional[dict[str, str]] = None) -> Retention:
        """The defaults, or ``TORCHSCOPE_TRACE_KEEP_DAYS`` / ``_GB`` where set to a number > 0."""
        env = os.environ if environ is None else environ
        return cls(
            _positive(env.get(DAYS_ENV), DEFAULT_DAYS), _positive(env.get(GB_ENV), DEFAULT_GB)
        )

    def describe(self) -> str:
        return f"traces older than {self.days:g} days or beyond {self.gb:g} GB in all"


def _positive(text: Optional[str], default: float) -> float:
    try:
        value = float(text or "")
    except ValueError:
        return default
    return value if value > 0 else default


def cache_base() -> Path:
    """The user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    return Path(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    )


def default_trace_dir(workspace: Optional[str] = None) -> Path:
    """The cache folder's subfolder for ``workspace`` (default: the working directory)."""
    base = cache_base()
    root = os.path.abspath(workspace or os.getcwd())
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(root) or "root")[:40]
    digest = hashlib.sha1(root.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return Path(base) / "torchscope" / "traces" / f"{name}-{digest}"


def newest_first(folder: Path, suffix: Union[str, tuple[str, ...]]) -> list[Path]:
    """The entries of ``folder`` named ``*suffix`` (one of them), newest first; one that
    vanishes while they are listed (another process sharing the folder pruned it) is left
    out."""
    if not folder.is_dir():
        return []
    found: list[tuple[float, Path]] = []
    for path in folder.iterdir():
        if path.name.endswith(suffix):
            with contextlib.suppress(OSError):
                found.append((path.stat().st_mtime, path))
    return [path for _, path in sorted(found, key=lambda item: item[0], reverse=True)]


class StoreError(Exception):
    """The trace folder cannot be used; the message is the one line for the user."""


class TraceStore:
    def __init__(
        self,
        folder: Optional[Path] = None,
        keep: int = DEFAULT_KEEP,
        retention: Optional[Retention] = None,
    ) -> None:
        self.folder = folder or default_trace_dir()
        self.keep = max(1, keep)
        self.retention = retention or Retention.from_env()
        self._made: dict[Path, float] = {}

    def ready(self) -> None:
        """The folder is there and the user's own, or :class:`StoreError` says why not (one
        line: a foreign or shared-writable folder, a link, an unwritable cache)."""
        try:
            self._ensure_folder()
        except Refused as exc:
            raise StoreError(f"trace folder {exc}") from None
        except OSError as exc:
            raise StoreError(
                f"cannot make the trace folder {self.folder} ({exc.strerror or exc}); set "
                "--trace-dir to a folder of yours that can be written"
            ) from None

    def problem(self) -> Optional[str]:
        """Why the folder cannot take a trace (:meth:`ready`'s message), None when it can."""
        try:
            self.ready()
        except StoreError as exc:
            return str(exc)
        return None

    def _ensure_folder(self) -> None:
        """The folder, the user's own (``files.private_folder``): made 0700 without following
        a link, or checked when it exists (never chmod-ed then, except the cache's
        ``torchscope/traces/<workspace>`` folders, torchscope's by name); a foreign or
        shared-writable one is :class:`~torchscope.files.Refused`."""
        base = cache_base()
        ours = base / "torchscope" in self.folder.parents
        private_folder(self.folder, base if ours else None, tighten=3 if ours else 0)

    def new_path(self, file: str, qualname: str) -> Path:
        """A fresh, descriptive trace path; traces past the retention are removed first."""
        self.ready()
        self.prune()
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{Path(file).stem}.{qualname}")[:80]
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
        path = self.folder / f"{stem}.{stamp}.{os.getpid()}{TRACE_SUFFIX}"
        self.own(path)
        return path

    def own(self, path: Path) -> None:
        """``path`` (a trace, or a folder of rank traces) was just made by this store's job."""
        self._made[path] = time.time()

    def traces(self) -> list[Path]:
        """The folder's traces and folders of rank traces, newest first."""
        return newest_first(self.folder, (TRACE_SUFFIX, RANKS_SUFFIX))

    def prune(self, now: Optional[float] = None) -> list[Path]:
        """Remove the traces past the retention (never the newest, nor this store's own of the
        last :data:`OWN_GRACE_S`); returns those removed."""
        now = time.time() if now is None else now
        limit_s, limit_bytes = self.retention.days * 86400, self.retention.gb * (1 << 30)
        total, removed = 0, []
        for index, path in enumerate(self.traces()):
            try:
                mtime, size = path.stat().st_mtime, _size(path)
            except OSError:
                continue
            total += size
            own = now - self._made.get(path, -OWN_GRACE_S * 2) < OWN_GRACE_S
            if index == 0 or own:
                continue
            if now - mtime > limit_s or total > limit_bytes:
                with contextlib.suppress(OSError):  # already gone, or not ours to remove
                    _remove(path)
                    removed.append(path)
                    total -= size
        _record_removed(self.folder, removed, now)
        remove_stale(self.folder, now)
        return removed


STALE_S = 3600.0
"""Age past which a temporary left by a writer that died (``*.tmp``, ``*.partial*``) goes."""


def remove_stale(folder: Path, now: float) -> None:
    """Remove the temporaries (``*.tmp``, ``*.partial*``) older than :data:`STALE_S`: a
    writer killed mid-write (or one that hit a full disk) left them; none is a trace."""
    with contextlib.suppress(OSError):
        for path in folder.iterdir():
            if path.name.endswith(".tmp") or ".partial" in path.name:
                with contextlib.suppress(OSError):
                    if now - path.lstat().st_mtime > STALE_S and not path.is_dir():
                        path.unlink()


def _size(path: Path) -> int:
    if not path.is_dir():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def _record_removed(folder: Path, removed: list[Path], now: float) -> None:
    if not removed:
        return
    log = folder / REMOVED_LOG
    with contextlib.suppress(OSError):
        if log.exists() and log.stat().st_size > REMOVED_LOG_MAX_BYTES:
            kept = log.read_text(encoding="utf-8", errors="replace").splitlines()
            log.write_text("\n".join(kept[len(kept) // 2 :]) + "\n", encoding="utf-8")
        with open(log, "a", encoding="utf-8") as out:
            out.writelines(f"{now:.0f}\t{path}\n" for path in removed)


def removed_note(path: str) -> str:
    """For a trace that is not there: "" if retention never removed it, else when it did and
    the setting that keeps traces longer."""
    target = os.path.abspath(path)
    log = Path(target).parent / REMOVED_LOG
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):  # a line that is not "<unix time>\t<path>" is skipped
        stamp, _, removed = line.partition("\t")
        if removed == target:
            try:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(stamp)))
            except (ValueError, OverflowError, OSError):
                continue
            return (
                f"removed on {when} by trace retention ({Retention.from_env().describe()} "
                f"are removed); {SETTING_HINT}, then profile again"
            )
    return ""
