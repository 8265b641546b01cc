"""What a worker process needs around it: its environment, its pure-Python dependencies, and
a guardian that cleans up after it if the host dies.

The worker runs in the user's interpreter, which has torch but maybe not msgpack. The host
imported msgpack itself, so it links that package (only that one: never the host's
site-packages, whose torch would hide a missing one) into a private folder and appends the
folder to the worker's path. msgpack falls back to pure Python where its C extension does not
match the worker's Python.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

from torchscope.host.guardian import GUARDIAN_BOOTSTRAP
from torchscope.host.process_tree import MARKER_ENV

#: Read by the worker (``worker/safety.py``): it exits if its parent is no longer this pid.
HOST_PID_ENV = "TORCHSCOPE_HOST_PID"

_DEPENDENCIES = ("msgpack",)


def dependency_path() -> Optional[str]:
    """A folder holding only links to the host's own pure-Python dependencies (or None)."""
    import msgpack

    source = Path(msgpack.__file__).resolve().parent
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = base / "torchscope" / "worker-path" / f"py{sys.version_info[0]}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in _DEPENDENCIES:
            link = folder / name
            if link.is_symlink() and Path(os.readlink(link)) == source:
                continue
            temporary = folder / f".{name}.{os.getpid()}"
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
            temporary.symlink_to(source, target_is_directory=True)
            temporary.replace(link)  # atomic: another host may be doing the same
    except OSError:
        return str(source.parent) if not (source.parent / "torch").exists() else None
    return str(folder)


def worker_environment(marker: str, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The host's environment, ``extra`` over it (``torchscope.env``, an env file, a launch
    configuration's: ``CUDA_VISIBLE_DEVICES`` chooses the GPU there), then our own markers."""
    env = {**os.environ, **(extra or {})}
    env.setdefault("PYTHONUNBUFFERED", "1")
    env[MARKER_ENV] = marker
    env[HOST_PID_ENV] = str(os.getpid())
    return env


def start_guardian(package_parent: str, marker: str) -> tuple[subprocess.Popen[bytes], int]:
    """Start the guardian for ``marker``; returns it and the pipe end the host must keep open
    (closing it, or dying, tells the guardian to clean up and exit)."""
    read_end, write_end = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != MARKER_ENV}
    try:
        guardian = subprocess.Popen(
            [sys.executable, "-c", GUARDIAN_BOOTSTRAP, package_parent, str(read_end), marker],
            pass_fds=(read_end,),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            cwd=tempfile.gettempdir(),
        )
    except OSError:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return guardian, write_end


async def release_guardian(
    guardian: subprocess.Popen[bytes], pipe: int, wait_s: float = 2.0
) -> None:
    """The one way a guardian ends: close the host's end of its pipe (it sweeps its marker
    once more and exits) and reap it, killed if it has not exited within ``wait_s``. Polls,
    so no thread waits on it."""
    with contextlib.suppress(OSError):
        os.close(pipe)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while guardian.poll() is None and loop.time() < deadline:
        await asyncio.sleep(0.02)
    if guardian.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            guardian.kill()
        guardian.wait()
