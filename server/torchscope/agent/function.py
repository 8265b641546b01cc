"""``attach --target FILE::QUALNAME``: the job's next calls of one function (``agent/capture``).

The target is found in the job's own loaded modules by its file and qualified name
(``run_hooks.live_attribute``), never by evaluating anything the client sent. It is wrapped
where it lives and under every module global that names the same function (``from model import
step`` in the script), and each of those is put back afterwards.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.agent.capture import AttachFailed, Capture, caller, skipped_dirs
from torchscope.protocol import AttachRequest, CallSeen
from torchscope.worker.run_hooks import live_attribute, rewrapped

#: A place the function is reachable from: (owner, attribute, the original, our wrapper).
_Site = tuple[Any, str, Any, Any]


def loaded_module(file: str) -> Optional[types.ModuleType]:
    """The job's module whose source is ``file`` (the script run as ``__main__`` included)."""
    wanted = Path(file).resolve()
    for module in list(sys.modules.values()):
        origin = getattr(module, "__file__", None)
        if isinstance(origin, str) and Path(origin).resolve() == wanted:
            return module
    return None


class FunctionCapture(Capture):
    def __init__(self, request: AttachRequest) -> None:
        super().__init__(request)
        self.name = request.qualname
        self.file = str(Path(request.file).resolve())
        module = loaded_module(request.file)
        if module is None:
            raise AttachFailed(
                "not-loaded",
                f"{request.file} is not loaded in this job — is it the file the job imports "
                "(not a copy elsewhere)?",
            )
        found = live_attribute(module, request.qualname)
        if found is None:
            raise AttachFailed("target", f"{request.qualname} is not in {request.file} as loaded")
        self.owner, self.attribute, self.raw = found
        self.fn = getattr(self.raw, "__func__", self.raw)
        if not isinstance(self.fn, types.FunctionType):
            raise AttachFailed("target", f"{request.qualname} is not a Python function")
        self.marked, self.note = _marked(self.fn)
        self.sites: list[_Site] = []
        self.seen = 0
        self._local = threading.local()
        self._skipped = skipped_dirs(self.torch)

    def install(self) -> None:
        replacement = rewrapped(self.raw, self._wrap)
        places = [(self.owner, self.attribute, self.raw)] + [
            (module, name, self.raw) for module, name in _aliases(self.fn, self.owner)
        ]
        for owner, name, raw in places:
            wrapper = replacement if raw is self.raw and owner is self.owner else self._wrap(raw)
            setattr(owner, name, wrapper)
            self.sites.append((owner, name, raw, wrapper))
        calls = self.request.calls
        self.progress("waiting", f"waiting for the job's next {2 * calls} calls of {self.name}")

    def restore(self) -> None:
        for owner, name, raw, wrapper in reversed(self.sites):
            now = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name)
            if now is wrapper:  # the job may have replaced it since: leave its own
                setattr(owner, name, raw)
        self.sites.clear()
        self.fail("cancelled", "restored")  # no-op once done; stops a profiler left running

    def def_line(self) -> int:
        return int(self.fn.__code__.co_firstlineno)

    def attribution_note(self) -> str:
        return self.note

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def torchscope_attached(*args: Any, **kwargs: Any) -> Any:
            return self.on_call(fn, args, kwargs)

        return torchscope_attached

    def on_call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.done.is_set() or getattr(self._local, "inside", False):
            return fn(*args, **kwargs)
        try:
            plan = self._claim(args)
        except Exception as exc:  # the agent's own failure: the call goes on unwrapped
            self.fail("agent", f"the agent failed before a call: {type(exc).__name__}: {exc}")
            plan = None
        if plan is None:
            return fn(*args, **kwargs)
        index, call = plan
        call.caller = caller(self._skipped, self.file)
        self._local.inside = True
        try:
            if index < self.request.calls:
                return self._timed(fn, args, kwargs, call)
            return self._profiled(fn, args, kwargs, call, index - self.request.calls)
        finally:
            self._local.inside = False

    def _claim(self, args: tuple[Any, ...]) -> Optional[tuple[int, CallSeen]]:
        """This call's place: (index, its mode), or None when no more are wanted."""
        from torchscope.worker.call_modes import call_mode

        with self.lock:
            if self.done.is_set() or self.seen >= 2 * self.request.calls:
                return None
            index, self.seen = self.seen, self.seen + 1
            if index == 0:
                self.cuda = any(getattr(a, "is_cuda", False) for a in args)
            if index == self.request.calls:
                self._start()
        training, grad = call_mode(self.request.qualname, args)
        return index, CallSeen(0.0, training, grad)

    def _timed(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], call: CallSeen
    ) -> Any:
        self.sync()
        start = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
            self.sync()
        except BaseException as exc:
            self.fail("call-raised", f"the job's call of {self.name} raised {exc!r}")
            raise
        call.us = (time.perf_counter() - start) * 1e6
        self.timed.append(call)
        self.progress(
            "timing", f"{self.name}: timed call {len(self.timed)} of {self.request.calls}"
        )
        return result

    def _profiled(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        call: CallSeen,
        step: int,
    ) -> Any:
        from torch.profiler import record_function

        invoke = self.marked or fn
        start = time.perf_counter()
        try:
            with record_function(f"ProfilerStep#{step}"):
                result = invoke(*args, **kwargs)
            self.sync()
        except BaseException as exc:
            self.fail("call-raised", f"the job's call of {self.name} raised {exc!r}")
            raise
        call.us = (time.perf_counter() - start) * 1e6
        self.profiled.append(call)
        last = len(self.profiled) >= self.request.calls
        if last:
            with self.lock:
                self._stop()
        self.progress("profile", f"{self.name}: profiled call {len(self.profiled)}")
        if last:
            self.done.set()
        return result


def _marked(fn: types.FunctionType) -> tuple[Optional[Callable[..., Any]], str]:
    """The line-marked copy (None and why not when it cannot be made)."""
    from torchscope.worker.line_markers import InstrumentError, instrument

    try:
        return instrument(fn), ""
    except (InstrumentError, SyntaxError, OSError) as exc:
        return None, f"line attribution unavailable: {exc}"


def _aliases(fn: types.FunctionType, home: Any) -> list[tuple[types.ModuleType, str]]:
    """Module globals other than ``home``'s own that name ``fn`` itself."""
    found = []
    for module in list(sys.modules.values()):
        if module is home or not isinstance(module, types.ModuleType):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        found += [(module, name) for name, value in items if value is fn]
    return found
