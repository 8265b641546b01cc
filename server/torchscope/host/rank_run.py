"""Profile one function on N ranks: ``torch.distributed.run`` on this host, one trace per rank.

The launcher is PyTorch's own (``python -m torch.distributed.run --standalone``: a c10d
rendezvous on a free localhost port, no files); each rank runs
``torchscope.worker.rank_main``. torchrun runs in a session of its own, so on a failure, a
timeout or a cancel the whole process group — launcher and every rank — is killed, and its
log folder (the only files torchrun writes) lives in a temporary folder removed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from torchscope.chatter import is_profiler_chatter, log_chatter
from torchscope.host import process_tree
from torchscope.host.profile_run import ProfileFailure
from torchscope.host.worker_env import release_guardian, start_guardian, worker_environment
from torchscope.host.worker_process import PACKAGE_PARENT
from torchscope.protocol import ProfileRequest, ProfileResult, from_builtins, to_builtins

BACKENDS = ("gloo", "nccl")
KILL_GRACE_S = 5.0


class RankFailure(ProfileFailure):
    """A multi-process profile failed; ``rank`` is the rank whose error came first (None when
    the launcher itself failed)."""

    def __init__(
        self, kind: str, message: str, rank: Optional[int], line: Optional[int], tb: str
    ) -> None:
        super().__init__(kind, message, line, tb)
        self.rank = rank


@dataclass
class RankResults:
    """Every rank's result, by rank, and the folder holding the traces."""

    results: list[ProfileResult]
    trace_dir: Path


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the launcher's whole session (it leads its process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the group (torchrun forwards it and stops its ranks), then SIGKILL."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(process.wait(), KILL_GRACE_S)
    _kill_group(process)
    await process.wait()


def _read_results(out: Path, nproc: int) -> tuple[list[ProfileResult], list[dict[str, Any]]]:
    results: list[ProfileResult] = []
    errors: list[dict[str, Any]] = []
    for rank in range(nproc):
        path = out / f"rank{rank}.result.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()  # the folder keeps the traces only
        if "error" in data:
            errors.append(data)
        else:
            results.append(from_builtins(ProfileResult, data["result"]))
    return results, errors


def _first_failure(errors: list[dict[str, Any]], nproc: int) -> RankFailure:
    """The error that came first: the others are usually peers losing their connection."""
    first = min(errors, key=lambda e: (e["time"], e["rank"]))
    err = first["error"]
    others = sorted(e["rank"] for e in errors if e is not first)
    also = f" (rank(s) {', '.join(map(str, others))} failed after it)" if others else ""
    return RankFailure(
        err["kind"],
        f"rank {first['rank']} of {nproc}: {err['message']}{also}",
        first["rank"],
        err.get("line"),
        err.get("traceback", ""),
    )


def _command(python: str, nproc: int, backend: str, logs: Path, req: Path, out: Path) -> list[str]:
    return [
        python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
        "--log-dir",
        str(logs),
        "-m",
        "torchscope.worker.rank_main",
        str(req),
        str(out),
        backend,
    ]


async def _pump(stream: Optional[asyncio.StreamReader], sink: Callable[[str], None]) -> None:
    if stream is None:
        return
    while line := await stream.readline():
        text = line.decode("utf-8", errors="replace").rstrip("\n")
        if is_profiler_chatter(text):  # the ranks' Kineto lines: the job's log only
            log_chatter(text)
        else:
            sink(text)


def _env(marker: str) -> dict[str, str]:
    """The worker's environment (the job marker every rank and its children inherit, so the
    guardian and the sweep after the run find them) plus torchscope on the path."""
    env = worker_environment(marker)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


async def _wait(process: asyncio.subprocess.Process, marker: str, limit: int) -> None:
    """torchrun's exit, or :class:`RankFailure` ``memory`` once the run's processes (torchrun
    and every rank) use more than ``limit``."""
    watch = asyncio.ensure_future(process_tree.watch_memory(process.pid, marker, lambda: limit))
    exited = asyncio.ensure_future(process.wait())
    try:
        await asyncio.wait({watch, exited}, return_when=asyncio.FIRST_COMPLETED)
        over = watch.result() if watch.done() else None  # None: torchrun is gone
        if over is not None:
            message = process_tree.memory_stop_message(
                over, "the ranks'", "a smaller input or fewer ranks"
            )
            raise RankFailure("memory", message, None, None, "")
        await exited
    finally:
        watch.cancel()
        exited.cancel()


async def _launch(
    cmd: list[str],
    cwd: Optional[str],
    timeout_s: float,
    on_output: Callable[[str], None],
    memory_limit: int,
) -> int:
    """Run torchrun in a session of its own; its exit status. On a timeout, a cancel or too
    much memory the whole group is stopped; in every case nothing of it is left running on
    return."""
    marker = process_tree.new_marker()
    # The same guardian as the worker's: if the host dies (any signal, SIGKILL too), it kills
    # torchrun, the ranks and whatever they started.
    guardian, pipe = start_guardian(PACKAGE_PARENT, marker)
    try:
        process = await asyncio.create_subprocess_exec(
            *cmd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=_env(marker),
            start_new_session=True,
        )
    except BaseException:
        await _release(guardian, pipe, marker)
        raise
    process_tree.own(process)
    pumps = asyncio.gather(_pump(process.stdout, on_output), _pump(process.stderr, on_output))
    try:
        await asyncio.wait_for(_wait(process, marker, memory_limit), timeout_s)
    except asyncio.TimeoutError:
        await _stop(process)
        raise RankFailure(
            "timeout",
            f"the ranks did not finish in {timeout_s:.0f} s: all were stopped "
            "(raise --timeout, or look for a collective that not every rank calls)",
            None,
            None,
            "",
        ) from None
    except BaseException:  # too much memory, or cancelled: never leave ranks behind
        await _stop(process)
        raise
    finally:
        _kill_group(process)  # stray grandchildren of a rank, if any
        await _release(guardian, pipe, marker)  # and any that left the group (setsid)
        await pumps
    return process.returncode if process.returncode is not None else -1


async def _release(guardian: subprocess.Popen[bytes], pipe: int, marker: str) -> None:
    """Kill every process still carrying the run's marker, then let the guardian go."""
    await process_tree.kill_marked(marker)
    await release_guardian(guardian, pipe, wait_s=5.0)  # it sweeps once more and exits


async def run_ranks(
    python: str,
    request: ProfileRequest,
    nproc: int,
    backend: str,
    trace_dir: Path,
    timeout_s: float,
    cwd: Optional[str] = None,
    on_output: Callable[[str], None] = lambda line: None,
) -> RankResults:
    """Run ``request`` on ``nproc`` ranks; traces go to ``trace_dir/rank<R>.json.gz``.

    Raises :class:`RankFailure` with the first failing rank's error and traceback; every
    process of the run has exited when this returns or raises."""
    if backend not in BACKENDS:
        raise RankFailure(
            "usage", f"backend {backend!r}: choose gloo (CPU) or nccl (GPU)", None, None, ""
        )
    if nproc < 1:
        raise RankFailure("usage", f"--nproc {nproc}: give at least 1", None, None, "")
    trace_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="torchscope-ranks-"))
    try:
        req = scratch / "request.json"
        req.write_text(json.dumps(to_builtins(request, finite=False)), encoding="utf-8")
        cmd = _command(python, nproc, backend, scratch / "logs", req, trace_dir)
        limit = process_tree.max_memory_bytes(request.options.max_memory)
        status = await _launch(cmd, cwd, timeout_s, on_output, limit)
        results, errors = _read_results(trace_dir, nproc)
        if errors:
            raise _first_failure(errors, nproc)
        if status != 0 or len(results) != nproc:
            raise RankFailure(
                "internal",
                f"torch.distributed.run exited with status {status} and "
                f"{len(results)} of {nproc} ranks reported: see its output above",
                None,
                None,
                "",
            )
        return RankResults(results, trace_dir)  # in rank order
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
