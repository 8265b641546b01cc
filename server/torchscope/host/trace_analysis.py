"""Analysing a trace in a child process, so that a giant or hostile trace cannot take the
language server or the MCP server down with it.

:class:`TraceAnalyzer` runs :func:`torchscope.analysis.analyze_trace` in a child Python
process, under the worker's safety belts:

- the child carries its own ``TORCHSCOPE_JOB`` marker, runs in its own session and dies with
  the server (``PR_SET_PDEATHSIG``, as the worker does); after each analysis every process
  carrying the marker is killed (it starts none: the analysis runs no user code, so unlike
  the worker it needs no guardian);
- its resident memory is watched against the same limit as a job's (``maxMemory`` /
  ``--max-memory``, default half the machine), and it is killed when it goes over;
- whatever ends it (the memory limit, a signal, a crash, an internal error) comes back as
  one :class:`~torchscope.analysis.TraceError` naming what happened and what to do; the
  server keeps serving.

One spare child is kept started (the analysis imported, ~0.3 s) and waiting on its stdin,
so an Open trace does not pay for the interpreter's start-up.

The child reads one JSON line ``{"path": ...}`` and writes one pickle, ``("ok", report)`` or
``("error", message)``, to stdout. Only this module's parent reads that pickle.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

from torchscope.host import process_tree
from torchscope.host.worker_env import HOST_PID_ENV, worker_environment

if TYPE_CHECKING:
    from torchscope.analysis.results import Report

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from torchscope.host.trace_analysis import child_main; child_main()"
)
#: Lines of the child's stderr quoted when it dies.
TAIL_LINES = 6


class _Child:
    """One started child: the process and its marker."""

    def __init__(self, process: asyncio.subprocess.Process, marker: str) -> None:
        self.process = process
        self.marker = marker


class TraceAnalyzer:
    """Analyses traces in child processes; ``max_memory()`` gives the bound in bytes (the
    job option's text, parsed by :func:`process_tree.max_memory_bytes`)."""

    def __init__(self, max_memory: Callable[[], str] = lambda: "", spare: bool = True) -> None:
        self._max_memory = max_memory
        self._keep_spare = spare
        self._spare: Optional[asyncio.Task[_Child]] = None
        self._closed = False

    async def analyze(self, path: str, max_memory: Optional[str] = None) -> Report:
        """The report of the trace at ``path``; every failure is a ``TraceError``."""
        from torchscope.analysis import TraceError

        try:
            limit = process_tree.max_memory_bytes(
                self._max_memory() if max_memory is None else max_memory
            )
        except ValueError as exc:
            raise TraceError(f"max_memory: {exc}") from None
        child = await self._take_child()
        self._start_spare()
        try:
            return await self._run(child, path, limit)
        except OSError as exc:
            raise TraceError(f"{path}: the analysis process could not run ({exc})") from None
        finally:
            await _kill(child)

    async def _take_child(self) -> _Child:
        spare, self._spare = self._spare, None
        if spare is not None:
            with contextlib.suppress(Exception):
                child = await spare
                if child.process.returncode is None and process_tree.alive(child.process.pid):
                    return child
                await _kill(child)  # killed while it waited: start another
        return await _start_child()

    def _start_spare(self) -> None:
        if self._keep_spare and not self._closed and self._spare is None:
            self._spare = asyncio.ensure_future(_start_child())

    async def _run(self, child: _Child, path: str, limit: int) -> Report:
        from torchscope.analysis import TraceError

        process = child.process
        assert process.stdin is not None and process.stdout is not None
        watch = asyncio.ensure_future(
            process_tree.watch_memory(process.pid, child.marker, lambda: limit)
        )
        stderr = asyncio.ensure_future(_read_all(process.stderr))
        try:
            process.stdin.write(json.dumps({"path": path}).encode() + b"\n")
            with contextlib.suppress(ConnectionError):
                await process.stdin.drain()
            process.stdin.close()
            output = asyncio.ensure_future(process.stdout.read())
            await asyncio.wait({output, watch}, return_when=asyncio.FIRST_COMPLETED)
            over = watch.result() if watch.done() else None
            if over is not None:
                await _kill(child)
                raise TraceError(_over_limit(path, over))
            data = await output
            await process_tree.wait_exited(process, 10.0)
        finally:
            watch.cancel()
        said = await stderr
        if process.returncode == 0 and data:
            status, value = pickle.loads(data)
            if status == "ok":
                return value  # type: ignore[no-any-return]
            raise TraceError(str(value))
        raise TraceError(_died(path, process.returncode, said))

    async def close(self) -> None:
        """Kill the spare child (and anything left of a running analysis's)."""
        self._closed = True
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.cancel()
            with contextlib.suppress(BaseException):
                await _kill(await spare)


async def _start_child() -> _Child:
    marker = process_tree.new_marker()
    process_tree.become_subreaper()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD_BOOTSTRAP,
        PACKAGE_PARENT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=worker_environment(marker),
        start_new_session=True,
    )
    return _Child(process, marker)


async def _kill(child: _Child) -> None:
    process = child.process
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process_tree.wait_exited(process, 10.0)
    process_tree.kill_marked_now(child.marker)


async def _read_all(stream: Optional[asyncio.StreamReader], most: int = 1 << 16) -> bytes:
    """The last ``most`` bytes of ``stream``, read to its end."""
    tail = b""
    if stream is None:
        return tail
    with contextlib.suppress(Exception):
        while piece := await stream.read(1 << 16):
            tail = (tail + piece)[-most:]
    return tail


def _over_limit(path: str, over: tuple[int, int]) -> str:
    used, limit = (process_tree.format_size(n) for n in over)
    return (
        f"{path}: the analysis stopped at {used} (limit {limit}): the trace needs more memory "
        "than allowed; analyse some steps of it (torchscope analyze --steps FIRST-LAST) or "
        "raise the limit (torchscope.maxMemory / --max-memory). The server is still running."
    )


def _died(path: str, code: Optional[int], stderr: bytes) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        how = f"was killed by {name}"
        if name == "SIGKILL":
            how += " (by another process, or the kernel's out-of-memory killer)"
    else:
        how = f"exited with code {code}"
    lines = [
        line
        for line in stderr.decode("utf-8", "replace").splitlines()
        if process_tree.worth_quoting(line)
    ][-TAIL_LINES:]
    said = "; its last output:\n" + "\n".join(lines) if lines else ""
    return (
        f"{path}: the analysis process {how} before it finished; the server is still running "
        f"and the next analysis starts a fresh process{said}"
    )


# --- the child -------------------------------------------------------------------------


def _die_with_parent() -> None:
    """SIGKILL when the server exits (as ``worker/safety.py`` arms it for the worker); exit
    at once when the server is already gone."""
    process_tree.die_with_parent()
    expected = os.environ.get(HOST_PID_ENV)
    if expected and expected.isdigit() and os.getppid() != int(expected):
        os._exit(70)


def child_main() -> None:
    """The child: die with the parent, import the analysis, then analyse the one trace
    named on stdin and write the pickled outcome to stdout."""
    _die_with_parent()
    from torchscope.analysis import TraceError, analyze_trace

    line = sys.stdin.buffer.readline()
    if not line:
        return  # a spare the parent no longer needs
    request: dict[str, Any] = json.loads(line)
    path = str(request["path"])
    outcome: tuple[str, Any]
    try:
        outcome = ("ok", analyze_trace(path))
    except TraceError as exc:
        outcome = ("error", str(exc))
    except RecursionError:
        outcome = ("error", f"{path}: the trace is nested too deeply to analyse")
    except MemoryError:
        outcome = ("error", f"{path}: the analysis ran out of memory; try --steps FIRST-LAST")
    except Exception as exc:  # a bug: one message, not a traceback, and the server lives
        outcome = (
            "error",
            f"{path}: internal error in the analysis ({type(exc).__name__}: {exc}); please "
            "report it with the trace",
        )
    data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
