"""What a server process holds, read from ``/proc``: its fds, threads, children and memory."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Held:
    """What one process holds; ``children`` names what each live child runs (its module)."""

    fds: int
    threads: int
    children: tuple[str, ...]
    rss_mb: float
    peak_rss_mb: float


def _stat(pid: str) -> list[str]:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text[text.rfind(")") + 2 :].split()


def _command(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def my_child(needle: str) -> int:
    """The one process this test process started whose command line holds ``needle``."""
    me = str(os.getpid())
    found = [
        int(p)
        for p in os.listdir("/proc")
        if p.isdigit() and _stat(p)[1:2] == [me] and needle in _command(p)
    ]
    assert len(found) == 1, (needle, found)
    return found[0]


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for {pid}")


def held(server: int) -> Held:
    pid = str(server)
    children = sorted(
        re.sub(r".* from (\S+) import .*", r"\1", _command(p))  # what it runs: the module
        for p in os.listdir("/proc")
        if p.isdigit() and (s := _stat(p))[1:2] == [pid] and s[0] not in ("Z", "X")
    )
    return Held(
        len(os.listdir(f"/proc/{pid}/fd")),
        len(os.listdir(f"/proc/{pid}/task")),
        tuple(children),
        _status_mb(server, "VmRSS"),
        _status_mb(server, "VmHWM"),
    )
