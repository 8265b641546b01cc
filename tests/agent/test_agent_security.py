"""The agent answers its own user only: its folder is 0700 and its socket 0600, another uid
cannot reach the socket, and one that does (the modes loosened by hand) is refused by the peer
credentials the kernel gives (``SO_PEERCRED``). Another uid is played by a child of this test
forked and ``setuid`` to ``nobody``: that needs root."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import msgpack  # noqa: F401  (imported before the fork: the child only frames and reads)
import pytest

from tests.agent.conftest import start_job
from torchscope.agent.paths import socket_dir
from torchscope.protocol import AgentHello, FrameDecoder, JobError, encode

NOBODY = 65534
needs_root = pytest.mark.skipif(
    os.getuid() != 0, reason="acting as another uid (setuid to nobody) needs root"
)


def _as_nobody(path: Path) -> str:
    """Connect to ``path`` as uid ``nobody`` and say what happened."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        said = "?"
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(10)
                conn.connect(str(path))
                conn.sendall(encode(AgentHello()))
                decoder, replies = FrameDecoder(), []
                while not replies:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    replies = decoder.feed(chunk)
                reply = replies[0] if replies else None
                said = f"refused: {reply.message}" if isinstance(reply, JobError) else repr(reply)
        except PermissionError:
            said = "no access"
        except BaseException as exc:
            said = f"error: {exc!r}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as out:
        said = out.read()
    os.waitpid(child, 0)
    return said


def test_modes(runtime: Path) -> None:
    job = start_job(runtime, steps=200, pause=0.01)
    folder = job.socket.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(job.socket.stat().st_mode) == 0o600
    assert job.socket.stat().st_uid == os.getuid()
    job.process.terminate()
    job.process.wait(30)


@needs_root
def test_another_uid_is_refused(runtime: Path) -> None:
    job = start_job(runtime, steps=400, pause=0.01)
    assert _as_nobody(job.socket) == "no access"  # the modes keep it out
    os.chmod(runtime, 0o755)
    os.chmod(job.socket.parent, 0o755)
    os.chmod(job.socket, 0o666)  # loosened by hand: the peer credentials still refuse it
    said = _as_nobody(job.socket)
    assert said.startswith("refused:") and "answers its own user" in said, said
    assert len(job.losses()) == 400 and job.process.returncode == 0


@needs_root
def test_a_folder_of_another_user_is_not_used(runtime: Path) -> None:
    folder = runtime / "theirs"
    folder.mkdir(mode=0o700)
    os.chown(folder, NOBODY, NOBODY)
    with pytest.raises(PermissionError, match="not a folder of this user's"):
        socket_dir(str(folder))
