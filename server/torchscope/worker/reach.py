"""Does the call reach the target? A call expression for another function must fail the job,
not profile that function under the target's name.

While the cold call and the warmup calls run, the target is wrapped where it lives (its
module global or class attribute, as ``torchscope run`` hooks a live module:
``run_hooks.live_attribute``) with a counter.
A call whose callee is the target itself (or its bound method) reaches it by construction.
When the counter stays at 0, one more call runs under ``sys.setprofile`` to be sure (the
target may be reached another way: a reference stored before the patch, an alias): it looks
for the target's code object, and notes the first function of the user's file that ran, the
callee the failure names (``it called MLP.forward``).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.worker.call_expression import PreparedCall
from torchscope.worker.loader import unwrap
from torchscope.worker.run_hooks import live_attribute, rewrapped


def _direct(prepared: PreparedCall, target: Any) -> bool:
    """The callee is the target (or a bound method of it)."""
    inner = unwrap(target)
    callee = prepared.func
    bound = getattr(callee, "__func__", None)
    if callee is target or unwrap(callee) is inner:
        return True
    return bound is not None and unwrap(bound) is inner


class ReachCheck:
    """``with ReachCheck(...) as check:`` around the first calls; then ``failure()``."""

    def __init__(
        self, prepared: PreparedCall, module: Any, qualname: str, target: Any, file: str
    ) -> None:
        self.prepared, self.qualname, self.target = prepared, qualname, target
        self.file = str(Path(file).resolve())
        self.calls = 0
        self._restore: Optional[Callable[[], None]] = None
        if not _direct(prepared, target):
            self._restore = self._patch(module)

    def _patch(self, module: Any) -> Optional[Callable[[], None]]:
        found = live_attribute(module, self.qualname)
        if found is None:
            return None
        owner, name, raw = found

        def count(fn: Callable[..., Any]) -> Callable[..., Any]:
            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls += 1
                return fn(*args, **kwargs)

            return counted

        wrapped = rewrapped(raw, count)
        if wrapped is None:
            return None
        setattr(owner, name, wrapped)
        return lambda: setattr(owner, name, raw)

    def __enter__(self) -> ReachCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._restore is not None:
            self._restore()

    def failure(self) -> str:
        """Why the call never reached the target ("" when it did, or when it cannot be told)."""
        if self._restore is None or self.calls:
            return ""
        reached, callee = self._traced_call()
        if reached:
            return ""
        called = f" (it called {callee})" if callee else ""
        return (
            f"the call never called {self.qualname}{called} — give a call that reaches it: "
            f"--call, or the `# torchscope:` directive above the def"
        )

    def _traced_call(self) -> tuple[bool, str]:
        """One more call under ``sys.setprofile``: (was the target's code run, the first
        function of the user's file that ran, else the callee's own name)."""
        code = getattr(unwrap(self.target), "__code__", None)
        seen: list[types.CodeType] = []

        def watch(frame: types.FrameType, event: str, arg: Any) -> None:
            if event == "call":
                seen.append(frame.f_code)

        sys.setprofile(watch)
        try:
            self.prepared.invoke()
        except Exception:
            return True, ""  # it raised: the warmup calls did not, so say nothing
        finally:
            sys.setprofile(None)
        if code is not None and code in seen:
            return True, ""
        resolved: dict[str, str] = {}
        for found in seen:
            name = found.co_filename
            if name not in resolved:
                resolved[name] = str(Path(name).resolve())
            if resolved[name] == self.file:
                return False, getattr(found, "co_qualname", found.co_name)
        callee = self.prepared.func
        if getattr(callee, "__qualname__", None):
            return False, str(callee.__qualname__)
        kind = type(callee).__qualname__
        return False, f"{kind}.forward" if callable(getattr(callee, "forward", None)) else kind
