"""Where a function lives: a notebook cell (``Cell In[3], line 2``) or a file (``model.py:12``).

IPython compiles each cell under a file name of its own and keeps the cell's source in
``linecache`` (that is how its tracebacks quote cells), so a function defined in a cell has a
code object whose ``co_filename`` names the cell and whose line numbers count from the cell's
first line. The line markers (``worker/line_markers.py``) read the source from ``linecache``
too, so the report's lines are the cell's lines; this module only finds the cell's number.
IPython is never imported here: only an IPython already running is asked.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any, Optional

from torchscope.source.targets import Target


def cell_number(filename: str) -> Optional[int]:
    """The execution count of the cell compiled under ``filename`` (None: not a cell of the
    running IPython, or no IPython)."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None) if ipython is not None else None
    shell = get() if get is not None else None
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if isinstance(names, dict) and filename in names:
        return int(names[filename])
    return None


def location(filename: str, line: int) -> str:
    """``Cell In[3], line 2`` for a cell, else ``file.py:12``."""
    number = cell_number(filename)
    if number is not None:
        return f"Cell In[{number}], line {line}"
    return f"{Path(filename).name}:{line}" if line else Path(filename).name


def source_lines(function: Any) -> list[tuple[int, str]]:
    """The function's source lines with their numbers in its file or cell ([] when unknown)."""
    try:
        lines, first = inspect.getsourcelines(function)
    except (OSError, TypeError):
        return []
    return [(first + k, text.rstrip("\n")) for k, text in enumerate(lines)]


def target_of(function: Any, qualname: str, file: str) -> Target:
    """The ``Target`` a ``ProfileOutcome`` names, read from the live function (a cell's
    function has no file to parse)."""
    lines = source_lines(function)
    first = lines[0][0] if lines else 0
    def_line = next(
        (n for n, text in lines if text.lstrip().startswith(("def ", "async def "))), first
    )
    end = lines[-1][0] if lines else first
    return Target(file, qualname, def_line, first, end, params=())
