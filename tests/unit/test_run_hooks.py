"""``torchscope run``'s hooks without a worker: which defs get found (methods, nested functions,
functions under ``functools.wraps`` and ``staticmethod``), that line numbers stay the file's,
and how the command line's ENTRY is read."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from torchscope.host.program_run import Entry, parse_entry
from torchscope.worker.run_hooks import Hooks

SOURCE = textwrap.dedent(
    """\
    import functools


    def logged(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper


    class Model:
        def forward(self, x):
            return x + 1

        @staticmethod
        def helper(x):
            return x * 2


    @logged
    def wrapped(x):
        return x - 1


    def outer(x):
        def inner(y):
            return y * 3
        return inner(x) + inner(x)


    def broken():
        raise ValueError("here")
    """
)

QUALNAMES = ["Model.forward", "Model.helper", "wrapped", "outer.<locals>.inner", "broken"]


def test_every_kind_of_def_is_hooked_and_lines_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "hooked.py"
    path.write_text(SOURCE, encoding="utf-8")
    calls: list[tuple[str, tuple[Any, ...]]] = []

    def on_call(file: str, qualname: str, fn: Any, args: Any, kwargs: Any) -> Any:
        assert file == str(path.resolve())
        calls.append((qualname, args[1:] if qualname == "Model.forward" else args))
        return fn(*args, **kwargs)

    hooks = Hooks([(str(path), q) for q in QUALNAMES], on_call)
    module = types.ModuleType("hooked")
    module.__file__ = str(path)
    try:
        exec(hooks.files.compile(path.read_bytes(), str(path)), module.__dict__)
        assert module.Model().forward(1) == 2
        assert module.Model.helper(2) == 4
        assert module.wrapped(5) == 4
        assert module.outer(1) == 6
        with pytest.raises(ValueError) as raised:
            module.broken()
        line = SOURCE.splitlines().index('    raise ValueError("here")') + 1
        assert raised.traceback[-1].lineno + 1 == line  # the file's own line numbers
        assert hooks.loaded(str(path))
    finally:
        hooks.remove()
    assert calls == [
        ("Model.forward", (1,)),
        ("Model.helper", (2,)),
        ("wrapped", (5,)),
        ("outer.<locals>.inner", (1,)),
        ("outer.<locals>.inner", (1,)),
        ("broken", ()),
    ]
    assert module.wrapped(5) == 4 and len(calls) == 6  # removed: calls go straight through
    assert sys.meta_path[0].__class__.__name__ != "_Finder"


def test_an_imported_module_is_hooked_through_the_finder(tmp_path: Path) -> None:
    (tmp_path / "imported_target.py").write_text("def fn(x):\n    return x\n", encoding="utf-8")
    seen: list[str] = []

    def on_call(file: str, qualname: str, fn: Any, args: Any, kwargs: Any) -> Any:
        seen.append(qualname)
        return fn(*args, **kwargs)

    hooks = Hooks([(str(tmp_path / "imported_target.py"), "fn")], on_call)
    sys.path.insert(0, str(tmp_path))
    try:
        import imported_target  # type: ignore[import-not-found]

        assert imported_target.fn(3) == 3 and seen == ["fn"]
    finally:
        hooks.remove()
        sys.path.remove(str(tmp_path))
        sys.modules.pop("imported_target", None)


def test_entries_are_read_as_a_shell_would_run_them(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("", encoding="utf-8")
    assert parse_entry(["--", "python", str(script), "--steps", "3"]) == Entry(
        "script", str(script), ("--steps", "3")
    )
    assert parse_entry(["-m", "pkg.train", "-v"]) == Entry("module", "pkg.train", ("-v",))
    assert parse_entry(["python3", "-m", "pytest", "t.py::test_x"]).kind == "pytest"
    assert parse_entry(["pytest", "t.py::test_x"]) == Entry("pytest", "pytest", ("t.py::test_x",))
    assert str(parse_entry(["python", str(script), "a b"])) == f"python {script} 'a b'"
    with pytest.raises(ValueError, match="no such script"):
        parse_entry(["python", "missing.py"])
    with pytest.raises(ValueError, match="give the program after --"):
        parse_entry([])
