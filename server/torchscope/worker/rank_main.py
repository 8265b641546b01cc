"""One rank of a multi-process profile, started by ``torch.distributed.run`` (torchrun).

    python -m torch.distributed.run --standalone --nproc-per-node N \\
        -m torchscope.worker.rank_main REQUEST.json OUT_DIR BACKEND

Each rank initialises the process group (so the call expression can use
``dist.get_rank()``), runs the same passes as a profile job (``RankJob``), writes its trace to
``OUT_DIR/rank<R>.json.gz`` and its result — or its error with the traceback — to
``OUT_DIR/rank<R>.result.json``. A failing rank exits with status 1 at once (``os._exit``: no
destructor may block on peers that will never answer), and torchrun then stops the others. A
rank that succeeded also ends with ``os._exit``, after the atexit hooks (see
``_exit_without_teardown``).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn, Optional

from torchscope.protocol import (
    JobError,
    ProfileRequest,
    Progress,
    from_builtins,
    to_builtins,
)
from torchscope.worker.job import JobFailed, ProfileJob
from torchscope.worker.timing import TimingSamples, time_calls


class RankJob(ProfileJob):
    """A profile job on one rank: every rank must make the same calls, since each call may
    hold a collective that waits for all ranks."""

    retime = False  # one rank timing again would wait in a collective the others never make

    def __init__(self, request: ProfileRequest, cuda: bool, rank: int) -> None:
        super().__init__(request, self._progress, cuda)
        self.rank = rank

    def _progress(self, message: Any) -> None:
        if isinstance(message, Progress) and self.rank == 0:
            print(f"[torchscope] {message.stage}: {message.message}", file=sys.stderr, flush=True)

    def _time(self, prepared: Any, estimate_s: float) -> TimingSamples:
        """The timing pass with one plan for all ranks: the slowest rank's estimate sizes the
        batches, and the number of samples is fixed up front instead of by a deadline."""
        import torch
        import torch.distributed as dist

        device = "cuda" if self.use_cuda else "cpu"
        slowest = torch.tensor([estimate_s], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        estimate = float(slowest.item())
        options = self.request.options
        samples = max(
            3, min(options.timing_calls, int(options.timing_budget_s / max(estimate, 1e-9)))
        )
        try:
            return time_calls(
                prepared.invoke, estimate, samples, float("inf"), self.use_cuda, float("inf")
            )
        except Exception as exc:
            raise self._fail(
                "call-raised", f"a timed call raised {type(exc).__name__}: {exc}", exc
            ) from exc


def _write(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(data), encoding="utf-8")
    partial.replace(path)


def _error(job_id: int, exc: BaseException) -> JobError:
    if isinstance(exc, JobFailed):
        return exc.error
    return JobError(
        job_id,
        "internal",
        f"torchscope rank error: {type(exc).__name__}: {exc}",
        traceback=traceback.format_exc(),
    )


def run_rank(request_file: str, out_dir: str, backend: str) -> NoReturn:
    """Run this rank's job; exits with 0 on success (after all ranks finished), else with 1."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    fields = json.loads(Path(request_file).read_text(encoding="utf-8"))
    out = Path(out_dir)
    fields["trace_path"] = str(out / f"rank{rank}.json.gz")
    request = from_builtins(ProfileRequest, fields)
    cuda = backend == "nccl" and torch.cuda.is_available()
    result_file = out / f"rank{rank}.result.json"
    error: Optional[JobError] = None
    try:
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)
        result = RankJob(request, cuda, rank).run()
        _write(result_file, {"rank": rank, "result": to_builtins(result, finite=False)})
    except BaseException as exc:  # every failure is reported, then the rank exits
        error = _error(request.job_id, exc)
        data = {"rank": rank, "error": to_builtins(error, finite=False), "time": time.time()}
        _write(result_file, data)
        sys.stderr.flush()
        os._exit(1)
    dist.barrier()
    dist.destroy_process_group()
    _exit_without_teardown(0)


def _exit_without_teardown(status: int) -> NoReturn:
    """End the rank once its files are written, without the interpreter's teardown.

    Native threads may still run torch code after ``destroy_process_group``: gloo's worker
    threads (importing ``torch._inductor``, as the profiler does, keeps the process group alive
    past ``destroy_process_group``) release the barrier's tensors a moment after the barrier
    returns, and a user's background thread may be inside an op. A thread that takes the GIL
    while the interpreter finalises is ended by ``pthread_exit``, whose unwinding through a
    ``noexcept`` torch frame calls ``std::terminate``: the rank dies with SIGABRT and torchrun
    fails the run after every rank reported (a quarter to half of the runs with a core held).
    The ``atexit`` hooks still run, so what the user's code registered is cleaned up."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def main(argv: Optional[list[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: rank_main REQUEST.json OUT_DIR BACKEND", file=sys.stderr)
        return 2
    return run_rank(*args)


if __name__ == "__main__":
    sys.exit(main())
