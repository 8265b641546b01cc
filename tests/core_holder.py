"""Another process holding one of this process's cores: the busy machine the tests and the
benchmarks under ``bench/`` measure against (one home for the spinner)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional


@contextmanager
def core_held(cpu: Optional[int] = None, settle_s: float = 0.2) -> Iterator[int]:
    """A busy loop pinned to ``cpu`` (default: the first CPU this process may use) while the
    ``with`` block runs; yields the CPU it holds. Killed and reaped on the way out."""
    held = min(os.sched_getaffinity(0)) if cpu is None else cpu
    code = f"import os\nos.sched_setaffinity(0, {{{held}}})\nwhile True:\n    pass"
    spinner = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(settle_s)
        yield held
    finally:
        spinner.kill()
        spinner.wait()
