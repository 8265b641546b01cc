"""Save the arguments of one real call (``torchscope run --capture``) and load them back.

A capture is one ``torch.save`` file: ``{"format", "qualname", "args", "kwargs", "main_file",
"captured_at"}``; for a method ``args[0]`` is ``self`` (the module with its parameters and
buffers). What the call returned is saved next to it (``<name>.output.pt``), so a replay can be
checked against the run. It is pickle: load only captures you made.

A class defined in the program's ``__main__`` (a script's own ``Attention``) is pickled as
``__main__.Attention``; loading maps ``__main__`` back to the target's module when the capture
was made with that file as the script (``main_file``).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import pickle
import sys
import time
import types
from pathlib import Path
from typing import Any, Optional

from torchscope.protocol import Capture
from torchscope.worker.call_expression import PreparedCall

FORMAT = 1
OUTPUT_SUFFIX = ".output.pt"


class CaptureError(Exception):
    """A capture cannot be loaded; the message says why and what to do."""


class _TooLarge(Exception):
    pass


class _Sink:
    """A write-only file that counts bytes (and writes them to ``real`` when given), refusing
    to go past ``limit`` (``over`` says so: torch may re-raise the refusal as its own error)."""

    def __init__(self, limit: int, real: Optional[Any] = None) -> None:
        self.limit = limit
        self.real = real
        self.written = 0
        self.over = False

    def write(self, data: Any) -> int:
        size = len(memoryview(data).cast("B"))
        self.written += size
        if self.written > self.limit:
            self.over = True
            raise _TooLarge()
        if self.real is not None:
            self.real.write(data)
        return size

    def flush(self) -> None:
        if self.real is not None:
            self.real.flush()


def _named_arguments(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
        named = list(bound.arguments.items())
    except (TypeError, ValueError):
        named = [(f"argument {i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    return named


def _unsaveable(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """``name (type): why`` for each argument that ``torch.save`` refuses."""
    import torch

    found = []
    for name, value in _named_arguments(func, args, kwargs):
        try:
            torch.save(value, _Sink(1 << 62))
        except Exception as exc:
            found.append(f"`{name}` ({type(value).__name__}): {exc}")
    return found


def _size_text(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def save_capture(
    path: str, func: Any, qualname: str, args: tuple[Any, ...], kwargs: dict[str, Any], limit: int
) -> Capture:
    """Write the call's arguments to ``path`` (through a temporary file), unless they are over
    ``limit`` bytes or cannot be saved; the returned info says which."""
    import torch

    info = Capture(path)
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    payload = {
        "format": FORMAT,
        "qualname": qualname,
        "args": args,
        "kwargs": kwargs,
        "main_file": str(Path(main_file).resolve()) if main_file else "",
        "captured_at": time.time(),
    }
    folder = Path(path).parent
    temporary = folder / f".{Path(path).name}.{os.getpid()}.partial"
    sink = _Sink(limit)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as file:
            sink.real = file
            torch.save(payload, sink)  # type: ignore[arg-type]
        temporary.replace(path)
    except Exception as exc:
        info.message = _refusal(exc, sink, qualname, limit, (func, args, kwargs))
        return info
    finally:
        if temporary.exists():
            temporary.unlink()
    info.written, info.bytes = True, sink.written
    return info


def _refusal(
    exc: Exception, sink: _Sink, qualname: str, limit: int, call: tuple[Any, Any, Any]
) -> str:
    if sink.over:
        return (
            f"the arguments of {qualname} are over the capture limit of {_size_text(limit)}: "
            "not saved — raise it with --capture-limit, or capture a smaller input"
        )
    reasons = _unsaveable(*call) or [f"{type(exc).__name__}: {exc}"]
    return (
        f"the arguments of {qualname} cannot be saved, so nothing was captured: "
        + "; ".join(reasons)
        + " (the profile in the run is not affected)"
    )


def save_output(path: str, output: Any) -> None:
    """What the captured call returned, next to the capture (best effort)."""
    import torch

    # an output that cannot be saved only loses the check against the run
    with contextlib.suppress(Exception):
        torch.save(output, str(Path(path).with_suffix("")) + OUTPUT_SUFFIX)


def _pickle_module(main_module: Optional[types.ModuleType]) -> types.ModuleType:
    """A ``pickle`` whose Unpickler finds ``__main__``'s classes in ``main_module``."""

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if module == "__main__" and main_module is not None:
                obj: Any = main_module
                for part in name.split("."):
                    obj = getattr(obj, part)
                return obj
            return super().find_class(module, name)

    shim = types.ModuleType("torchscope_capture_pickle")
    shim.__dict__.update({k: getattr(pickle, k) for k in ("Pickler", "dump", "dumps", "load")})
    shim.__dict__.update({"Unpickler": Unpickler, "loads": pickle.loads})
    return shim


def read_capture(path: str, module: Optional[types.ModuleType], cuda: bool) -> dict[str, Any]:
    """The capture's payload; ``module`` stands for ``__main__`` when the capture was made with
    its file as the program's script."""
    import torch

    try:
        data = torch.load(
            path,
            map_location=None if cuda else "cpu",
            weights_only=False,  # the user's own capture: modules and any picklable argument
            pickle_module=_pickle_module(module),
        )
    except FileNotFoundError:
        raise CaptureError(
            f"the capture {path} is gone — capture again with torchscope run --capture"
        ) from None
    except Exception as exc:
        raise CaptureError(
            f"the capture {path} cannot be loaded ({type(exc).__name__}: {exc}) — the code may "
            "have changed since: capture again with torchscope run --capture"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CaptureError(f"{path} is not a torchscope capture (format {FORMAT})")
    return data


def load_capture(path: str, module: types.ModuleType, target: Any, cuda: bool) -> PreparedCall:
    """The captured call of ``target`` (with ``self`` first for a method), ready to repeat."""
    data = read_capture(path, module, cuda)
    args, kwargs = tuple(data["args"]), dict(data["kwargs"])
    name = str(data.get("qualname", getattr(target, "__qualname__", "fn")))
    return PreparedCall(target, args, kwargs, f"{name}(<captured inputs>)")
