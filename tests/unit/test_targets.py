"""Finding the function to profile from a line or a qualified name, without running it."""

import textwrap

import pytest

from torchscope.source.targets import TargetError, function_at, function_named, parse_spec

SOURCE = textwrap.dedent(
    """
    import torch


    # torchscope: fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))
    # torchscope[cuda]: fn(torch.randn(64, 64, device="cuda"), w, b)
    def fn(x, w, b=None):
        y = torch.matmul(x, w)
        return y


    class Model:
        @torch.no_grad()
        def forward(self, x, *, scale=2):
            def inner(z):
                return z
            return inner(x)

        @staticmethod
        def helper():
            return 1


    def zero():
        return torch.ones(2)
    """
)


def test_line_inside_body_finds_the_innermost_def() -> None:
    target = function_at(SOURCE, "m.py", 8)
    assert target is not None and target.qualname == "fn" and target.def_line == 7
    inner = function_at(SOURCE, "m.py", 16)
    assert inner is not None and inner.qualname == "Model.forward.<locals>.inner"
    method = function_at(SOURCE, "m.py", 13)  # the decorator line belongs to the method
    assert method is not None and method.qualname == "Model.forward"
    assert function_at(SOURCE, "m.py", 2) is None


def test_directives_above_the_def_with_conditions() -> None:
    target = function_named(SOURCE, "m.py", "fn")
    assert [d.call for d in target.directives] == [
        "fn(torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8))",
        'fn(torch.randn(64, 64, device="cuda"), w, b)',
    ]
    assert target.directive_for(cuda_available=False).call.startswith("fn(torch.randn(8, 8)")  # type: ignore[union-attr]
    assert len(target.applicable_directives(cuda_available=True)) == 2
    assert len(target.applicable_directives(cuda_available=False)) == 1


def test_params_and_whether_a_call_is_needed() -> None:
    fn = function_named(SOURCE, "m.py", "fn")
    assert [(p.name, p.has_default) for p in fn.params] == [("x", False), ("w", False), ("b", True)]
    assert fn.needs_call
    forward = function_named(SOURCE, "m.py", "Model.forward")
    assert [p.name for p in forward.params] == ["x", "scale"]  # self is the receiver's
    assert forward.is_method and forward.needs_call
    assert not function_named(SOURCE, "m.py", "zero").needs_call
    assert not function_named(SOURCE, "m.py", "Model.helper").needs_call


def test_unknown_function_lists_what_exists() -> None:
    with pytest.raises(TargetError, match=r"no function 'nope'.*fn, Model.forward"):
        function_named(SOURCE, "m.py", "nope")


def test_syntax_error_names_the_line() -> None:
    with pytest.raises(TargetError, match=r"m.py:1: syntax error") as info:
        function_at("def f(:\n  pass\n", "m.py", 1)
    assert info.value.line == 1


def test_spec_parsing() -> None:
    path, qualname = parse_spec("examples/matmul_add.py::fn")
    assert str(path) == "examples/matmul_add.py" and qualname == "fn"
    with pytest.raises(TargetError, match="FILE::FUNCTION"):
        parse_spec("examples/matmul_add.py")


def test_nproc_in_the_directive_bracket() -> None:
    source = (
        "# torchscope[nproc=2]: step(8)\n"
        "# torchscope[cuda, nproc=4]: step(64)\n"
        "# torchscope[cuda]: step(16)\n"
        "def step(n):\n"
        "    pass\n"
    )
    target = function_named(source, "m.py", "step")
    assert [(d.call, d.condition, d.nproc) for d in target.directives] == [
        ("step(8)", None, 2),
        ("step(64)", "cuda", 4),
        ("step(16)", "cuda", None),
    ]
    assert [d.nproc for d in target.applicable_directives(cuda_available=False)] == [2]


NESTED_BLOCKS = textwrap.dedent(
    """
    import sys

    try:
        import numpy
    except ImportError:
        def fallback(x):
            return x

    match sys.platform:
        case "linux":
            def on_linux(x):
                return x
        case _:
            pass

    class Layer:
        if True:
            def forward(self, x):
                def inner(y):
                    return y
                return inner(x)
    """
)


def test_one_walker_finds_defs_in_every_block_for_targets_hooks_and_fixes() -> None:
    """Targets, ``run``'s hooks and the fixes find the same functions, in every kind of block
    (except handlers and match cases included), by ``source.targets.walk_functions``."""
    import ast

    from torchscope.source.fixes._source import find_function
    from torchscope.worker.run_hooks import _add_hooks

    names = ["fallback", "on_linux", "Layer.forward", "Layer.forward.<locals>.inner"]
    for name in names:
        assert function_named(NESTED_BLOCKS, "m.py", name).qualname == name
        assert find_function(ast.parse(NESTED_BLOCKS), name) is not None, name
    assert function_named(NESTED_BLOCKS, "m.py", "Layer.forward").is_method
    assert sorted(_add_hooks(ast.parse(NESTED_BLOCKS), "m.py", names)) == sorted(names)
