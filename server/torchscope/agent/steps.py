"""``attach --steps N``: the job's next optimizer steps, whole (``agent/capture``), for
``analyze``'s step view. An optimizer step post-hook (torch's global one) marks each step's
end: the first ``steps`` steps are timed unprofiled, the next ``steps`` are profiled, each
one ``ProfilerStep#N`` from one step's end to the next. Only the first optimizer that steps is
counted (a job with two steps each of them once an iteration)."""

from __future__ import annotations

import time
from typing import Any, Optional

from torchscope.agent.capture import Capture
from torchscope.protocol import AttachRequest, CallSeen


class StepsCapture(Capture):
    def __init__(self, request: AttachRequest) -> None:
        super().__init__(request)
        request.calls = request.steps
        self.name = f"the next {request.steps} optimizer steps"
        self.handle: Any = None
        self.optimizer: Optional[int] = None
        self.last = 0.0
        self.marks = 0
        self.span: Any = None

    def install(self) -> None:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self.handle = register_optimizer_step_post_hook(self._on_step)
        self.progress("waiting", f"waiting for the job's next optimizer step ({self.name})")

    def restore(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        self.fail("cancelled", "restored")

    def _on_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.done.is_set() or self.optimizer not in (None, id(optimizer)):
            return
        try:
            self._mark(optimizer)
        except Exception as exc:  # the agent's own failure: the job goes on
            self.fail("agent", f"the agent failed at an optimizer step: {exc!r}")

    def _mark(self, optimizer: Any) -> None:
        now, steps = time.perf_counter(), self.request.steps
        self.optimizer, self.marks = id(optimizer), self.marks + 1
        if self.marks > 1:
            record = self.timed if len(self.timed) < steps else self.profiled
            record.append(CallSeen((now - self.last) * 1e6, None, True, "optimizer.step"))
            self.progress("steps", f"step {self.marks - 1} of {2 * steps}")
        if self.span is not None:
            self.span.__exit__(None, None, None)
            self.span = None
        if len(self.profiled) >= steps:
            with self.lock:
                self._stop()
            self.done.set()
            return
        if len(self.timed) >= steps:
            from torch.profiler import record_function

            if self.prof is None:
                with self.lock:
                    self._start()
            self.span = record_function(f"ProfilerStep#{len(self.profiled)}")
            self.span.__enter__()
        self.last = time.perf_counter()
