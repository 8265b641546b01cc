"""The job service every face (the CLI, the language server, the MCP server) runs its jobs
through, so that each face only parses its own input and presents the outcome.

Today it is the one place a :class:`~torchscope.host.profile_run.Profiler` is built: the
interpreter, where traces are kept (and how many), the working directory, where the worker's
stderr goes, and the analysis child its traces go to (a server shares its Open-trace child).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from torchscope.host.profile_run import Profiler
from torchscope.host.trace_analysis import TraceAnalyzer
from torchscope.host.trace_store import DEFAULT_KEEP, TraceStore


def open_profiler(
    python: str,
    trace_dir: Optional[Path] = None,
    keep_traces: int = DEFAULT_KEEP,
    cwd: Optional[str] = None,
    on_worker_stderr: Optional[Callable[[str], None]] = None,
    analyzer: Optional[TraceAnalyzer] = None,
) -> Profiler:
    """A profiler for ``python`` (its worker starts at the first job, or ``warm``); traces go
    to ``trace_dir`` (default: the cache folder), the newest ``keep_traces`` of them kept."""
    return Profiler(
        python,
        TraceStore(trace_dir, keep_traces),
        cwd=cwd,
        on_worker_stderr=on_worker_stderr,
        analyzer=analyzer,
    )
