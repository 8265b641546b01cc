"""Run the program of ``torchscope run`` inside the worker: a script as ``__main__``, a module
as ``python -m`` does, or pytest in this process.

``sys.argv``, ``sys.path[0]``, ``__main__`` and the working directory's meaning are what the
program would see from a shell started in ``cwd`` (the worker's own directory, the workspace
root, when none is given; the worker's directory is restored afterwards). ``sys.exit`` ends
the program, not the worker; so does ``os._exit`` in this process (in a child the program
forked, such as a DataLoader worker, it stays the real one). ``StopProgram``, raised by the
hook once every target is profiled, ends it early. What the program writes to stderr passes
through a tee that keeps its last lines.

How it ended is told once, in the outcome (the host puts it in the failure every face shows),
not on stderr as well: ``SystemExit("message")``'s message is ``error``; an uncaught
exception's traceback, with the program's own frames only (no torchscope or ``runpy`` frame),
is ``traceback``.
"""

from __future__ import annotations

import collections
import os
import runpy
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from torchscope.worker.run_hooks import TargetFiles

TAIL_LINES = 12


class StopProgram(BaseException):
    """Every target is profiled: stop the program (a BaseException, so ``except Exception``
    in the program lets it through)."""


class _ProgramExit(BaseException):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class EntryOutcome:
    exit: str  # "stopped" | "finished" | "failed"
    code: Optional[int]
    error: str = ""
    test: Optional[str] = None
    traceback: str = ""
    stderr_tail: list[str] = field(default_factory=list)


class _TailTee:
    """``sys.stderr`` while the program runs: writes through, keeps the last lines."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.lines: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._partial = ""

    def write(self, text: str) -> int:
        parts = (self._partial + text).split("\n")
        self._partial = parts.pop()[-500:]
        self.lines.extend(p[:500] for p in parts if p.strip())
        return int(self.real.write(text))

    def tail(self) -> list[str]:
        return [*self.lines, *([self._partial] if self._partial.strip() else [])]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


_PYTEST_OUTCOMES = {
    0: "passed",
    1: "failed",
    2: "interrupted",
    3: "error",
    4: "usage",
    5: "no tests",
}


def _run_script(path: str, args: list[str], files: TargetFiles) -> None:
    script = str(Path(path).resolve())
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": script, "__builtins__": __builtins__, "__cached__": None})
    sys.modules["__main__"] = main
    sys.argv = [path, *args]
    sys.path.insert(0, str(Path(script).parent))
    with open(script, "rb") as file:
        code = files.compile(file.read(), script)
    exec(code, main.__dict__)


def _run_module(name: str, args: list[str]) -> None:
    sys.argv = [name, *args]
    sys.path.insert(0, os.getcwd())
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _run_pytest(args: list[str], files: TargetFiles) -> int:
    import pytest

    extra = ["-p", "no:cacheprovider"]
    if any(Path(f).name.startswith("test_") or f.endswith("_test.py") for f in files.by_file):
        extra.append("--assert=plain")  # its rewriting importer would skip our hooks
    sys.argv = ["pytest", *args]
    return int(pytest.main([*args, *extra]))


def run_entry(
    kind: str, target: str, args: list[str], files: TargetFiles, cwd: str = ""
) -> EntryOutcome:
    """Run the program to its end (or its stop) in ``cwd``; never raises for what the program
    does."""
    saved = (list(sys.argv), list(sys.path), sys.modules.get("__main__"), sys.stderr, os._exit)
    home = os.getcwd()
    tee = _TailTee(sys.stderr)
    sys.stderr = tee
    pid = os.getpid()
    real_exit: Callable[[int], Any] = os._exit

    def program_exit(code: int) -> Any:
        if os.getpid() != pid:  # a forked child ends as it asked
            real_exit(code)
        raise _ProgramExit(code)

    os._exit = program_exit  # type: ignore[assignment]
    outcome = EntryOutcome("finished", 0)
    try:
        if cwd:
            os.chdir(cwd)  # relative paths in the program and its arguments resolve here
        if kind == "pytest":
            code = _run_pytest(args, files)
            test = _PYTEST_OUTCOMES.get(code, str(code))
            outcome = EntryOutcome("failed" if code else "finished", code, test=test)
        elif kind == "module":
            _run_module(target, args)
        else:
            _run_script(target, args, files)
    except StopProgram:
        outcome = EntryOutcome("stopped", None)
    except SystemExit as exc:
        code = _exit_code(exc.code)
        said = "" if exc.code is None or isinstance(exc.code, int) else str(exc.code)
        outcome = EntryOutcome("failed" if code else "finished", code, error=said)
    except _ProgramExit as exc:
        said = f"the program called os._exit({exc.code})"
        outcome = EntryOutcome("failed" if exc.code else "finished", exc.code, error=said)
    except BaseException as exc:
        said = f"{type(exc).__name__}: {exc}"
        outcome = EntryOutcome("failed", 1, error=said, traceback=program_traceback(exc))
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
        sys.stderr = saved[3]
        os._exit = saved[4]
        os.chdir(home)
    outcome.stderr_tail = tee.tail()
    return outcome


_PACKAGE = Path(__file__).parents[1]
_OWN_FILES = tuple(
    {f"{_PACKAGE}{os.sep}", f"{_PACKAGE.resolve()}{os.sep}", str(runpy.__file__), "<frozen runpy>"}
)


def _program_frames(stack: traceback.StackSummary) -> traceback.StackSummary:
    return traceback.StackSummary.from_list(
        [f for f in stack if not (f.filename or "").startswith(_OWN_FILES)]
    )


def program_traceback(exc: BaseException) -> str:
    """``exc``'s traceback as ``python prog.py`` prints it: the program's frames only (and those
    of what it calls), not torchscope's that ran it; chained exceptions alike."""
    shown = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()
    pending = [shown]
    while pending:
        each = pending.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        each.stack = _program_frames(each.stack)
        pending += [e for e in (each.__cause__, each.__context__) if e is not None]
    return "".join(shown.format()).rstrip("\n")


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1
