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

One warm child (the analysis imported, ~0.3 s) serves analyses one after another, so an
Open trace pays neither the interpreter's start-up nor more than the pickling of its report;
after an analysis that left it large (:data:`RECYCLE_BYTES`) it is replaced.

Every trace goes here: an opened one, and the traces of profile, run, compare, sweep and diff
jobs (``Profiler.run_job`` hands its job kind :meth:`TraceAnalyzer.analyse`, with the worker's
measurements), so a user function that records millions of ops cannot grow the server either.
:func:`analyse_here` is the same analysis in this process: the child's entry, and the notebook's
(which runs in the user's kernel anyway).

The child reads JSON lines ``{"path": ..., "limit": bytes, "measurements": base64 pickle or
null, "inventory": bool}`` and answers each with one length-prefixed pickle,
``("ok", Analysed)`` or ``("error", message)``, on stdout (it refuses, before reading, a trace
whose estimated need is over the limit: ``ingest/memory.py``). Only this module's parent reads
those pickles, and only it writes the child's.

Over 400 lines: the parent's side and the child's side of that one exchange stay together, so
that what one writes and the other reads are changed in one place.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pickle
import signal
import struct
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Protocol

from torchscope.host import process_tree
from torchscope.host.worker_env import HOST_PID_ENV, worker_environment

if TYPE_CHECKING:
    from torchscope.analysis import CompiledLines, Inventory, KernelLines
    from torchscope.analysis.results import Measurements, Report

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHILD_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from torchscope.host.trace_analysis import child_main; child_main()"
)
#: Lines of the child's stderr quoted when it dies.
TAIL_LINES = 6
#: A warm child that holds more than this after an analysis is replaced (Python keeps the
#: memory a large trace took), so an idle child stays small.
RECYCLE_BYTES = 256 << 20
_LENGTH = struct.Struct(">Q")
_TAKEN = b"+"
"""The byte the child writes as it reads a request, before it starts on it."""
_WARM_UP = (
    b'{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,'
    b'"dur":5,"args":{"Input Dims":[[8,8],[8,8]]}}]}'
)


@dataclass(frozen=True)
class Analysed:
    """One trace's report, what its steps ran (``inventory``) and a compiled trace's per-line
    times (``lines``), each when it was asked for."""

    report: Report
    inventory: Optional[Inventory] = None
    lines: Optional[CompiledLines] = None


class Analyse(Protocol):
    """How a job kind has its traces analysed; raises ``TraceError``. ``Profiler.run_job``
    gives the child's (:meth:`TraceAnalyzer.analyse`)."""

    def __call__(
        self,
        path: str,
        measurements: Optional[Measurements],
        with_inventory: bool,
        kernels: Optional[KernelLines] = None,
    ) -> Analysed: ...


def analyse_here(
    path: str,
    measurements: Optional[Measurements] = None,
    with_inventory: bool = False,
    kernels: Optional[KernelLines] = None,
) -> Analysed:
    """The analysis of the trace at ``path`` in this process; raises ``TraceError``. A trace
    opened without a job's measurements is judged, as ``torchscope analyze`` judges it, by this
    machine's name and calibrated peaks when it was recorded here (``analysis.measure.machine``)."""
    from torchscope.analysis import LocalMachine, analyze_trace

    local = LocalMachine.read() if measurements is None else None
    if not with_inventory and kernels is None:
        return Analysed(analyze_trace(path, measurements, local))
    from torchscope.analysis import inventory
    from torchscope.analysis.engine import analyze
    from torchscope.ingest import load_trace

    trace = load_trace(path)
    return Analysed(
        analyze(trace, measurements, local),
        inventory(trace) if with_inventory else None,
        kernels.of(trace) if kernels is not None else None,
    )


class _Child:
    """One started child: the process, its marker and the tail of its stderr."""

    def __init__(self, process: asyncio.subprocess.Process, marker: str) -> None:
        self.process = process
        self.marker = marker
        self.tail: deque[str] = deque(maxlen=4 * TAIL_LINES)
        self.stderr = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        with contextlib.suppress(Exception):
            while line := await stream.readline():
                self.tail.append(line.decode("utf-8", "replace").rstrip())

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and process_tree.alive(self.process.pid)


class TraceAnalyzer:
    """Analyses traces in a child process; ``max_memory()`` gives the memory bound (the job
    option's text: ``process_tree.max_memory_bytes``). One warm child serves analyses one
    after another; a second analysis while it is busy gets a child of its own."""

    def __init__(self, max_memory: Callable[[], str] = lambda: "") -> None:
        self._max_memory = max_memory
        self._idle: Optional[asyncio.Future[_Child]] = None
        self._killing: set[asyncio.Task[None]] = set()
        self._closed = False

    def prestart(self) -> None:
        """Start the warm child now (the interpreter and the analysis imported, ~0.3 s), so
        the first analysis does not wait for it."""
        if self._idle is None and not self._closed:
            self._idle = asyncio.ensure_future(_start_child())

    async def analyze(self, path: str, max_memory: Optional[str] = None) -> Report:
        """The report of the trace at ``path``; every failure is a ``TraceError``."""
        return (await self.analyse(path, max_memory)).report

    async def analyse(
        self,
        path: str,
        max_memory: Optional[str] = None,
        measurements: Optional[Measurements] = None,
        with_inventory: bool = False,
        kernels: Optional[KernelLines] = None,
    ) -> Analysed:
        """:func:`analyse_here` in the child, under ``max_memory`` (the analyzer's own limit
        when None); every failure is a ``TraceError``."""
        from torchscope.analysis import TraceError

        try:
            limit = process_tree.max_memory_bytes(
                self._max_memory() if max_memory is None else max_memory
            )
        except ValueError as exc:
            raise TraceError(f"max_memory: {exc}") from None
        try:
            child = await self._take_child(limit)
        except OSError as exc:
            raise TraceError(f"{path}: the analysis process could not start ({exc})") from None
        request = {
            "path": path,
            "limit": limit,
            "measurements": _pickled(measurements) if measurements is not None else None,
            "inventory": with_inventory,
            "kernels": _pickled(kernels) if kernels is not None else None,
        }
        try:
            try:
                outcome = await self._run(child, request)
            except _NotTaken:  # the warm child died while idle: a fresh one takes it
                await _kill(child)
                child = await _start_child()
                outcome = await self._run(child, request, last=True)
        except BaseException:
            await _kill(child)
            raise
        self._give_back(child, limit)
        if outcome[0] == "ok":
            return outcome[1]  # type: ignore[no-any-return]
        raise TraceError(str(outcome[1]))

    async def _take_child(self, limit: int) -> _Child:
        """The warm child, or a new one when it is busy, gone or holds over half of
        ``limit`` already."""
        idle, self._idle = self._idle, None
        if idle is not None:
            with contextlib.suppress(Exception):
                child = await idle
                if child.alive and _held(child) <= limit // 2:
                    return child
                await _kill(child)  # killed while it waited, or too large: start another
        return await _start_child()

    def _give_back(self, child: _Child, limit: int) -> None:
        """Keep ``child`` warm for the next analysis, unless one already is, or it holds
        much memory, or the analyzer is closed."""
        if self._closed or self._idle is not None or _held(child) > min(RECYCLE_BYTES, limit // 2):
            task = asyncio.ensure_future(_kill(child))  # in the background: the report is ready
            self._killing.add(task)
            task.add_done_callback(self._killing.discard)
            return
        done: asyncio.Future[_Child] = asyncio.get_running_loop().create_future()
        done.set_result(child)
        self._idle = done

    async def _run(
        self, child: _Child, request: dict[str, Any], last: bool = False
    ) -> tuple[str, Any]:
        """Send ``request`` to ``child``; its outcome, or a TraceError when it died or went over
        the request's limit (:class:`_NotTaken` when it was gone before, unless ``last``)."""
        from torchscope.analysis import TraceError

        path, limit = request["path"], request["limit"]
        process = child.process
        assert process.stdin is not None and process.stdout is not None
        watch = asyncio.ensure_future(
            process_tree.watch_memory(process.pid, child.marker, lambda: limit)
        )
        reply = asyncio.ensure_future(_read_reply(process.stdout))
        try:
            process.stdin.write(json.dumps(request).encode() + b"\n")
            with contextlib.suppress(ConnectionError):
                await process.stdin.drain()
            await asyncio.wait({reply, watch}, return_when=asyncio.FIRST_COMPLETED)
            over = watch.result() if watch.done() else None
            if over is not None:
                raise TraceError(_over_limit(path, over))
            try:
                data = await reply
            except _NotTaken:
                if not last:
                    raise
                data = None
            if data is not None:
                outcome: tuple[str, Any] = pickle.loads(data)
                return outcome
            await process_tree.wait_exited(process, 5.0)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.stderr), 2.0)
            raise TraceError(_died(path, process.returncode, list(child.tail)))
        finally:
            watch.cancel()
            reply.cancel()

    async def close(self) -> None:
        """Kill the warm child."""
        self._closed = True
        idle, self._idle = self._idle, None
        if idle is not None:
            with contextlib.suppress(BaseException):
                await _kill(await idle)
        if self._killing:
            await asyncio.wait(set(self._killing))


def _pickled(value: Any) -> str:
    return base64.b64encode(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).decode()


def _held(child: _Child) -> int:
    return process_tree.rss_bytes([child.process.pid])


class _NotTaken(Exception):
    """The child was gone before it read the request (it died while idle)."""


async def _read_reply(stream: asyncio.StreamReader) -> Optional[bytes]:
    """The child's :data:`_TAKEN` byte, then one length-prefixed reply; None when the child
    died during the analysis, :class:`_NotTaken` when it died before reading the request."""
    try:
        await stream.readexactly(len(_TAKEN))
    except (asyncio.IncompleteReadError, ConnectionError):
        raise _NotTaken() from None
    try:
        (size,) = _LENGTH.unpack(await stream.readexactly(_LENGTH.size))
        return await stream.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


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
    process_tree.own(process)
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
    child.stderr.cancel()


def _over_limit(path: str, over: tuple[int, int]) -> str:
    used, limit = (process_tree.format_size(n) for n in over)
    return (
        f"{path}: the analysis stopped at {used} (limit {limit}): the trace needs more memory "
        "than allowed; analyse some steps of it (torchscope analyze --steps FIRST-LAST) or "
        "raise the limit (torchscope.maxMemory / --max-memory). The server is still running."
    )


def _died(path: str, code: Optional[int], tail: list[str]) -> str:
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
    lines = [line for line in tail if process_tree.worth_quoting(line)][-TAIL_LINES:]
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
    """The child: die with the parent, import the analysis, then for each JSON line on
    stdin analyse that trace and write the pickled outcome, length-prefixed, to stdout."""
    _die_with_parent()
    from torchscope.analysis import inventory
    from torchscope.analysis.engine import analyze
    from torchscope.ingest import load_trace
    from torchscope.ingest.memory import memory_limit

    with contextlib.suppress(Exception):  # warm up: the stages' lazy imports, once
        inventory(warm := load_trace(_WARM_UP, name="warm-up"))
        analyze(warm)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(_TAKEN)  # the parent knows this request is taken: a death now is its own
        out.flush()
        request = json.loads(line)
        path, limit = str(request["path"]), request.get("limit")
        given = request.get("measurements")
        measurements = pickle.loads(base64.b64decode(given)) if given else None
        asked = request.get("kernels")
        kernels = pickle.loads(base64.b64decode(asked)) if asked else None
        with memory_limit(limit if isinstance(limit, int) else None):
            outcome = _outcome(path, measurements, bool(request.get("inventory")), kernels)
        data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
        out.write(_LENGTH.pack(len(data)) + data)
        out.flush()


def _outcome(
    path: str, measurements: Any, with_inventory: bool, kernels: Any = None
) -> tuple[str, Any]:
    """``("ok", Analysed)`` or ``("error", message)``: every failure one message."""
    from torchscope.analysis import TraceError

    try:
        return ("ok", analyse_here(path, measurements, with_inventory, kernels))
    except TraceError as exc:
        return ("error", str(exc))
    except RecursionError:
        return ("error", f"{path}: the trace is nested too deeply to analyse")
    except MemoryError:
        return ("error", f"{path}: the analysis ran out of memory; try --steps FIRST-LAST")
    except Exception as exc:  # a bug: one message, not a traceback, and the server lives
        return (
            "error",
            f"{path}: internal error in the analysis ({type(exc).__name__}: {exc}); please "
            "report it with the trace",
        )
