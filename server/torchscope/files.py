"""Files and folders a user, an editor or an agent names, read and written without trusting
them: the one home of these rules (issue 49), imported by the host, the worker and the readers
alike, so it imports nothing of torchscope and runs on the worker's Python 3.9.

- :func:`read_regular`: a regular file only, opened non-blocking (a FIFO with no writer is
  refused at once instead of waiting), at most ``limit`` bytes: a FIFO, a device, a socket, a
  directory or an oversized file is one :class:`Refused` message, before a byte is read.
- :func:`private_folder`: a folder that is the user's own, made ``0700`` one component at a
  time below an anchor, ``openat``-style with ``O_NOFOLLOW``: no symbolic link is followed;
  a folder torchscope did not create is never ``chmod``-ed; one owned by another user, or
  writable by group or others without the sticky bit, is refused.
- :func:`write_atomic` / :func:`no_space`: a file written whole or not at all (a temporary
  file in the same folder, ``fsync``, ``rename``), and the one message for a full disk.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Optional, Union

SOURCE_LIMIT = 10 << 20
"""The largest Python source file read (10 MB): a real module is far below it."""

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
NO_SPACE = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)
"""The errnos of a full disk, a full quota and a file-size limit (``RLIMIT_FSIZE``)."""

PathLike = Union[str, "os.PathLike[str]"]


class Refused(OSError):
    """A path that is not what it must be; ``str()`` is the one message for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def size_text(count: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} bytes"


def read_regular(path: PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; anything else is
    :class:`Refused` (``what`` names it in the message: "Python source"). Opening errors
    (no such file, permission) propagate as the ``OSError`` they are."""
    fd = os.open(os.fspath(path), _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(
                f"{os.fspath(path)}: is {kind_of(info.st_mode)}, not a regular file; "
                f"pass a {what} saved on disk"
            )
        if info.st_size > limit:
            raise Refused(
                f"{os.fspath(path)}: is {size_text(info.st_size)}, over the "
                f"{size_text(limit)} torchscope reads as a {what}; check the path"
            )
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew between fstat and read
        raise Refused(f"{os.fspath(path)}: is over the {size_text(limit)} read as a {what}")
    return data


# --- private folders -----------------------------------------------------------------------


def _deepest_existing(path: Path) -> Path:
    for parent in path.parents:
        if os.path.lexists(parent):
            return parent
    return Path(path.anchor or ".")


def _check_owned(where: Path, info: os.stat_result) -> None:
    """A folder we did not create: it must be ours, and not writable by others unless
    sticky (``/tmp``-like: then no one else may remove or replace what we put there)."""
    if info.st_uid != os.geteuid():
        raise Refused(
            f"{where}: is owned by another user (uid {info.st_uid}), so they could read "
            "or replace what torchscope writes there; use a folder of your own"
        )
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise Refused(
            f"{where}: is writable by other users (mode {stat.S_IMODE(info.st_mode):o}, no "
            "sticky bit), so they could replace what torchscope writes there; use a folder "
            "of your own, or chmod go-w it"
        )


def _open_component(fd: int, part: str, where: Path) -> tuple[int, bool]:
    """The folder ``part`` inside the folder ``fd``, made ``0700`` when missing; whether it
    was made now."""
    created = False
    try:
        os.mkdir(part, 0o700, dir_fd=fd)
        created = True
    except FileExistsError:
        pass
    try:
        child = os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            is_link = os.path.islink(where)
            raise Refused(
                f"{where}: is {'a symbolic link' if is_link else 'not a folder'}; torchscope "
                "follows no link where it keeps files: pass the real folder"
            ) from None
        raise
    return child, created


def private_folder(path: PathLike, anchor: Optional[PathLike] = None, tighten: int = 0) -> Path:
    """Make or check ``path`` as the user's own folder, every component below ``anchor``
    (default: its deepest existing ancestor) opened without following links. Components made
    now get ``0700``; existing ones are checked (:func:`_check_owned`), and the last
    ``tighten`` of them, being torchscope's own by name (``~/.cache/torchscope``), lose any
    group/other bits. Raises :class:`Refused` with the one message, or the ``OSError`` of a
    folder that cannot be made."""
    target = Path(os.path.abspath(os.fspath(path)))
    base = Path(os.path.abspath(os.fspath(anchor))) if anchor else _deepest_existing(target)
    if base == target or base not in target.parents:
        base = _deepest_existing(target)
    parts = target.relative_to(base).parts
    if os.path.lexists(base) and not os.path.isdir(base):
        raise Refused(f"{target}: cannot be made: {base} is a file, not a folder; use a folder")
    os.makedirs(base, 0o700, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        where = base
        for index, part in enumerate(parts):
            where = where / part
            child, created = _open_component(fd, part, where)
            os.close(fd)
            fd = child
            info = os.fstat(fd)
            if created or (index >= len(parts) - tighten and info.st_uid == os.geteuid()):
                if stat.S_IMODE(info.st_mode) & 0o077:
                    os.fchmod(fd, 0o700)  # made now (the umask) or torchscope's by name
            else:
                _check_owned(where, info)
    finally:
        os.close(fd)
    return target


# --- writing -------------------------------------------------------------------------------


def no_space(path: PathLike, exc: OSError, what: str = "the trace", hint: str = "") -> str:
    """The one message for a write that ran out of room (:data:`NO_SPACE`)."""
    why = {
        errno.EFBIG: "the file-size limit (ulimit -f) was reached",
        errno.ENOSPC: "no space left on the device, or a file-size limit (ulimit -f)",
    }.get(exc.errno or 0, "the disk quota is full")
    return (
        f"no space left writing {what} to {os.fspath(path)} ({why}); free space"
        + (f" or {hint}" if hint else "")
    )


@contextlib.contextmanager
def atomic_file(path: PathLike, mode: int = 0o600) -> Iterator[BinaryIO]:
    """A file written whole or not at all: a temporary ``.<name>.<pid>.tmp`` in the same
    folder (created ``O_EXCL | O_NOFOLLOW``, ``mode``), flushed, ``fsync``-ed and renamed
    over ``path`` when the block ends; on any error it is removed and the error raised."""
    final = Path(os.fspath(path))
    temporary = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temporary, flags, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle  # type: ignore[misc]
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_atomic(path: PathLike, data: bytes, mode: int = 0o600) -> None:
    with atomic_file(path, mode) as handle:
        handle.write(data)
