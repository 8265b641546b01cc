"""Save the arguments of one real call (``torchscope run --capture``) and load them back.

A capture is one ``torch.save`` file: ``{"format", "qualname", "args", "kwargs", "main_file",
"captured_at"}``; for a method ``args[0]`` is ``self`` (the module with its parameters and
buffers). What the call returned is saved next to it (``<name>.output.pt``), so a replay can be
checked against the run. Captures hold the real data of the call, so they are written 0600
in 0700 folders; loading one is data only unless this user's torchscope signed it
(``worker/capture_trust.py``).

A class defined in the program's ``__main__`` (a script's own ``Attention``) is pickled as
``__main__.Attention``; loading maps ``__main__`` back to the target's module when the capture
was made with that file as the script (``main_file``).
"""

from __future__ import annotations

import contextlib
import inspect
import pickle
import re
import sys
import time
import types
from pathlib import Path
from typing import Any, Optional

from torchscope.files import Refused, atomic_file, private_folder
from torchscope.protocol import Capture
from torchscope.worker.call_expression import PreparedCall
from torchscope.worker.capture_trust import ALLOWED, key_path, sign, trusted

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
    sink = _Sink(limit)
    try:
        private_folder(Path(path).parent)
        with atomic_file(path) as file:
            sink.real = file
            torch.save(payload, sink)  # type: ignore[arg-type]
        sign(path)
    except Refused as exc:
        info.message = f"nothing was captured: {exc}"
        return info
    except Exception as exc:
        info.message = _refusal(exc, sink, qualname, limit, (func, args, kwargs))
        return info
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
    with contextlib.suppress(Exception), atomic_file(
        str(Path(path).with_suffix("")) + OUTPUT_SUFFIX
    ) as file:
        torch.save(output, file)


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

    where = None if cuda else "cpu"
    try:
        if trusted(path):  # this user's torchscope wrote it: modules and any picklable value
            data = torch.load(path, where, weights_only=False, pickle_module=_pickle_module(module))
        else:
            data = _load_data(path, where)
    except CaptureError:
        raise
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


def _load_data(path: str, where: Optional[str]) -> Any:
    """A capture this user did not sign, loaded as data only (``weights_only``), or
    refused with the one message."""
    import torch

    try:
        with torch.serialization.safe_globals(ALLOWED):
            return torch.load(path, where, weights_only=True)
    except pickle.UnpicklingError as exc:
        needs = re.search(r"GLOBAL ([\w.]+)", str(exc))
        raise CaptureError(
            f"the capture {path} was refused: it holds more than tensors and plain data "
            f"({needs.group(1) if needs else 'an object'}), which loading could run as code, and "
            f"your torchscope did not write it (no valid signature with your key, "
            f"{key_path()}); capture it again on this machine with torchscope run --capture"
        ) from None


def load_capture(path: str, module: types.ModuleType, target: Any, cuda: bool) -> PreparedCall:
    """The captured call of ``target`` (with ``self`` first for a method), ready to repeat."""
    data = read_capture(path, module, cuda)
    args, kwargs = tuple(data["args"]), dict(data["kwargs"])
    name = str(data.get("qualname", getattr(target, "__qualname__", "fn")))
    return PreparedCall(target, args, kwargs, f"{name}(<captured inputs>)")
