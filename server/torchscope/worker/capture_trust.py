"""Which captures this user's torchscope wrote: an HMAC of the file with a per-user key.

A capture (``worker/captures.py``) is a ``torch.save`` pickle. One that holds only data —
tensors, containers, numbers, strings, the dtype/device/size types ``torch.load(weights_only=
True)`` allows, and :data:`ALLOWED` — loads as data, wherever it came from. One that needs
more (a module as ``self``, a user class) is loaded only when its signature (``<capture>.sig``:
the HMAC-SHA256 of the file's bytes, hex) checks out with this user's key: the key is 32 random
bytes in ``$XDG_STATE_HOME/torchscope/capture.key`` (``~/.local/state/…``), mode 0600 in a 0700
folder, outside every repository; so a capture that came with a repository, or that someone
else wrote, is refused instead of run.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any, Optional

from torchscope.files import private_folder, read_regular, write_atomic

KEY_NAME = "capture.key"
SIG_SUFFIX = ".sig"
_KEY_BYTES = 32


def _allowed() -> list[Any]:
    """Ours beyond what ``weights_only`` allows itself: builtins a call's arguments hold."""
    return [slice, range, complex, set, frozenset]


ALLOWED = _allowed()


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "torchscope"


def key_path() -> Path:
    return state_dir() / KEY_NAME


def _key(create: bool) -> Optional[bytes]:
    """This user's key; made (0600, in a 0700 folder) when ``create`` and missing."""
    path = key_path()
    try:
        return read_regular(path, 1024, "key file")
    except FileNotFoundError:
        if not create:
            return None
    private_folder(path.parent, path.parent.parent, tighten=1)
    key = secrets.token_bytes(_KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # another writer made it first: theirs is the key
        return read_regular(path, 1024, "key file")
    with os.fdopen(fd, "wb") as out:
        out.write(key)
        out.flush()
        os.fsync(out.fileno())
    return key


def _digest(key: bytes, path: str) -> str:
    mac = hmac.new(key, digestmod=hashlib.sha256)
    with open(path, "rb") as data:
        for piece in iter(lambda: data.read(1 << 20), b""):
            mac.update(piece)
    return mac.hexdigest()


def sign(path: str) -> None:
    """Sign the capture at ``path`` as this user's (``<path>.sig``, 0600)."""
    key = _key(create=True)
    assert key is not None
    write_atomic(path + SIG_SUFFIX, _digest(key, path).encode() + b"\n")


def trusted(path: str) -> bool:
    """Whether ``path`` carries a signature made with this user's key."""
    try:
        key = _key(create=False)
        said = read_regular(path + SIG_SUFFIX, 1024, "signature").strip().decode("ascii")
    except (OSError, UnicodeDecodeError):
        return False
    if key is None:
        return False
    return hmac.compare_digest(said, _digest(key, path))
