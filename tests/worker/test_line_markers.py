"""The line-marked copy behaves exactly like the original (run without a profiler)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

from torchscope.worker.line_markers import MARKER_PREFIX, InstrumentError, instrument

SOURCE = textwrap.dedent(
    '''
    import functools
    import torch

    LIMIT = 5

    def control_flow(n):
        out = []
        for i in range(n):
            if i == 1:
                continue
            if i == 3:
                break
            out.append(i)
        else:
            out.append("no break")
        while n > 0:
            n -= 1
        try:
            raise ValueError("x")
        except ValueError as exc:
            out.append(str(exc))
        finally:
            out.append("finally")
        return out

    def raises():
        x = 1
        raise KeyError("inside")

    def with_defaults(a, b=2, *args, c=3, **kwargs):
        """Docstring stays the docstring."""
        return a, b, args, c, kwargs

    def make_counter():
        count = 0
        def bump(step=1):
            nonlocal count
            count += step
            return count
        return bump

    class Base:
        def value(self):
            return 1

    class Child(Base):
        def __init__(self):
            self.__hidden = 10

        @torch.no_grad()
        def value(self):
            return super().value() + self.__hidden + torch.is_grad_enabled()

    def logged(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return ("logged", func(*args, **kwargs))
        return wrapper

    @logged
    def decorated(x):
        return x * 2

    def generator(n):
        for i in range(n):
            yield i
    '''
)


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    path = Path(tmp_path_factory.mktemp("markers")) / "marked_samples.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("marked_samples", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_control_flow_is_unchanged(module: ModuleType) -> None:
    copy = instrument(module.control_flow)
    assert copy(5) == module.control_flow(5) == [0, 2, "x", "finally"]
    assert copy(2) == module.control_flow(2)
    assert copy is not module.control_flow


def test_exceptions_keep_their_line(module: ModuleType) -> None:
    copy = instrument(module.raises)
    with pytest.raises(KeyError) as info:
        copy()
    assert info.traceback[-1].lineno + 1 == module.raises.__code__.co_firstlineno + 2


def test_defaults_varargs_and_docstring(module: ModuleType) -> None:
    copy = instrument(module.with_defaults)
    assert copy(1) == module.with_defaults(1)
    assert copy(1, 5, 6, c=7, d=8) == (1, 5, (6,), 7, {"d": 8})
    assert copy.__doc__ == "Docstring stays the docstring."


def test_closures_share_cells_with_the_original(module: ModuleType) -> None:
    original = module.make_counter()
    copy = instrument(original)
    assert original() == 1 and copy(5) == 6 and original() == 7


def test_super_private_names_and_decorators(module: ModuleType) -> None:
    child = module.Child()
    copy = instrument(module.Child.value)
    with torch.enable_grad():
        assert copy(child) == module.Child().value() == 11  # no_grad re-applied: + False


def test_functools_wraps_decorators_are_reapplied(module: ModuleType) -> None:
    copy = instrument(module.decorated)
    assert copy(3) == ("logged", 6)


def test_generators_are_refused(module: ModuleType) -> None:
    with pytest.raises(InstrumentError, match="generator"):
        instrument(module.generator)


def test_markers_name_the_lines(module: ModuleType) -> None:
    copy = instrument(module.control_flow)
    names = {c for c in copy.__code__.co_consts if isinstance(c, str)}
    for const in copy.__code__.co_consts:
        if hasattr(const, "co_consts"):
            names |= {c for c in const.co_consts if isinstance(c, str)}
    first = module.control_flow.__code__.co_firstlineno
    assert f"{MARKER_PREFIX}{first + 1}" in names  # out = []
    assert f"{MARKER_PREFIX}{first + 2}" in names  # for header
