"""The profiler's chatter: lines torch's C++ side (Kineto) prints on stderr around every
profile — ``USDT:… SyncActivityProfilerHandler.cpp:52] profiler_start`` — that say nothing to
the user. One predicate, used wherever a job's stderr reaches a face: the host's reader of the
worker's stderr (``host/worker_process.py``; the CLI, the language server and MCP all get their
lines from it) and the notebook's in-process jobs (``notebook/stderr_filter.py``).

Such a line goes to the job's log, the logger :data:`LOG_NAME` at DEBUG, which ``--verbose``
shows (:func:`show_chatter`). Kineto's errors are not chatter and still reach the user.
Importing this module imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import TextIO

LOG_NAME = "torchscope.chatter"

# Kineto's log format: LEVEL:YYYY-MM-DD HH:MM:SS PID:TID FILE.cpp:LINE] text
_KINETO = re.compile(
    r"^\s*(?:(?:USDT|STAGE):"
    r"|(?:INFO|WARNING):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.cpp:\d+\])"
)


def is_profiler_chatter(line: str) -> bool:
    """A line of Kineto's own logging (USDT probes, stage markers, info and warnings), not an
    error and not anything the user's code printed."""
    return _KINETO.match(line) is not None


def log_chatter(line: str) -> None:
    """Keep ``line`` in the job's log only."""
    logging.getLogger(LOG_NAME).debug("%s", line.rstrip("\n"))


def show_chatter(stream: TextIO) -> logging.Handler:
    """``--verbose``: the job's log, the profiler's chatter included, on ``stream``; returns
    the handler that writes it (:func:`chatter_shown` removes it again)."""
    logger = logging.getLogger(LOG_NAME)
    logger.setLevel(logging.DEBUG)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
    return handler


@contextlib.contextmanager
def chatter_shown(stream: TextIO) -> Iterator[None]:
    """:func:`show_chatter` for the block only (``%torchscope --verbose`` in a notebook)."""
    handler = show_chatter(stream)
    try:
        yield
    finally:
        logging.getLogger(LOG_NAME).removeHandler(handler)
