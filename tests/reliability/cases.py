"""The user code the reliability tests profile: one function per way code can go wrong."""

from __future__ import annotations

from pathlib import Path

CASES = """\
import asyncio
import ctypes
import os
import subprocess
import sys
import time

import torch


def good():
    return torch.ones(16, 16) @ torch.ones(16, 16)


def raises():
    raise ValueError("bad value 42")


def calls_exit():
    sys.exit(3)


def calls_os_exit():
    os._exit(7)


def calls_abort():
    os.abort()


def segfault():
    ctypes.string_at(0)


def spins():
    while True:
        pass


def eats_memory():
    hoard = []
    while True:
        hoard.append(torch.ones(1 << 22))


def prints_20mb():
    print("x" * (20 * 1024 * 1024))
    return torch.ones(2)


def reads_stdin():
    return input()


SLEEPER = "import time; time.sleep(600)"
ESCAPER = (
    "import os, signal, time; os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "time.sleep(600)"
)


def starts_children():
    subprocess.Popen([sys.executable, "-c", SLEEPER])
    subprocess.Popen([sys.executable, "-c", ESCAPER])
    return torch.ones(4) + 1


def child_then_crash():
    subprocess.Popen([sys.executable, "-c", SLEEPER])  # holds the worker's stderr open
    time.sleep(0.2)
    ctypes.string_at(0)


def child_then_spin():
    subprocess.Popen([sys.executable, "-c", ESCAPER])
    while True:
        pass


async def coroutine():
    await asyncio.sleep(0)
    return torch.ones(64, 64).mm(torch.ones(64, 64))


def generator():
    for _ in range(3):
        yield torch.ones(64, 64).mm(torch.ones(64, 64))


def slow():
    time.sleep(0.5)  # long enough to still run when the next request comes, short for CI
    return torch.ones(2)
"""


def write_cases(folder: Path) -> Path:
    path = folder / "cases.py"
    path.write_text(CASES)
    return path


def def_line(path: Path, name: str) -> int:
    """0-based line of ``def name`` / ``async def name``."""
    for index, line in enumerate(path.read_text().splitlines()):
        if line.lstrip().startswith((f"def {name}(", f"async def {name}(")):
            return index
    raise AssertionError(f"no def {name} in {path}")
