"""Per-line times for methods under decorators (issue 55): ``@torch.no_grad()``,
``@torch.inference_mode()``, a ``functools.wraps`` decorator and ``torch.compiler.disable``,
each called through a bound method (``Generator().gen(x, 3)``) or through the module
(``Generator()(x)``). The marked copy is called with the receiver the original call binds."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from types import ModuleType
from typing import Any

import pytest
import torch

from tests.conftest import FIXTURES
from torchscope.host.profile_run import PROFILE, Profiler
from torchscope.host.trace_store import TraceStore
from torchscope.protocol import JobOptions, to_builtins
from torchscope.source.targets import function_named, read_source
from torchscope.worker.attribution import marked_call
from torchscope.worker.call_expression import prepare_call

FILE = FIXTURES / "decorated_methods.py"
# method -> GEMMs its hot line runs per call (the directive's n, or 1)
METHODS = {
    "Generator.gen": 3,
    "Generator.infer": 1,
    "Generator.logged_step": 1,
    "Generator.eager_only": 1,
    "Generator.forward": 1,
}


def hot_line(qualname: str) -> int:
    """The line marked ``# hot`` inside the method ``qualname``."""
    lines = FILE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if f"def {qualname.split('.')[-1]}(" in line)
    return next(i + 1 for i in range(start, len(lines)) if "# hot" in lines[i])


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each method profiled once from its directive, in one worker."""
    source = read_source(FILE)
    store = TraceStore(tmp_path_factory.mktemp("decorated-traces"))

    async def go() -> dict[str, dict[str, Any]]:
        profiler = Profiler(sys.executable, store, cwd=str(FIXTURES))
        try:
            out = {}
            for name in METHODS:
                target = function_named(source, str(FILE), name)
                options = JobOptions(steps=3, warmup=1)
                out[name] = to_builtins(await profiler.run_job(PROFILE, target, None, options))
            return out
        finally:
            await profiler.close()

    return asyncio.run(go())


@pytest.mark.parametrize("qualname", sorted(METHODS))
def test_decorated_method_gets_per_line_times(reports, qualname: str) -> None:
    report = reports[qualname]
    assert report["attribution_note"] == ""
    lines = {entry["line"]: entry for entry in report["lines"]}
    hot = lines[hot_line(qualname)]
    gemms = sum(op["calls"] for op in hot["ops"] if op["name"] in ("aten::addmm", "aten::mm"))
    assert gemms == METHODS[qualname]  # n reached the copy: the receiver took no argument's place
    assert report["lines"][0]["line"] == hot["line"]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("decorated_methods_inproc", FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("qualname", "call", "check"),
    [
        ("Generator.gen", "Generator().gen(torch.randn(4, 128), 2)", "no_grad"),
        ("Generator.infer", "Generator().infer(torch.randn(4, 128), n=2)", "inference"),
        ("Generator.forward", "Generator()(torch.randn(4, 128))", "no_grad"),
        ("Generator.logged_step", "Generator().logged_step(torch.randn(4, 128))", "grad"),
    ],
)
def test_the_copy_keeps_the_decorator_and_the_receiver(
    qualname: str, call: str, check: str
) -> None:
    """The marked copy runs under the method's own decorator, bound to the call's receiver."""
    module = _module()
    owner, name = qualname.split(".")
    target = getattr(module, owner).__dict__[name]
    prepared = prepare_call(call, vars(module))
    marked, note = marked_call(prepared, module, qualname, target)
    assert marked is not None and note == ""
    with marked.active():
        out = marked.invoke()
    assert isinstance(out, torch.Tensor) and out.shape == (4, 128)
    expected = prepared.invoke()
    assert out.requires_grad == expected.requires_grad == (check == "grad")
    assert out.is_inference() == expected.is_inference() == (check == "inference")
