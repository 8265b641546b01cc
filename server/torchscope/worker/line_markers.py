"""A copy of the target function whose every statement runs inside a profiler marker.

``torch.profiler``'s own stacks carry each function's *def* line, not the line that ran
(kineto#630, pytorch#167605), so per-line attribution needs help: the copy wraps each statement
— recursively inside ``for``/``while``/``if``/``with``/``try`` bodies — in
``with _mark("torchscope:L<line>"):``. Every op, runtime call and (through its correlation id)
kernel then falls inside the marker of the line that caused it; the innermost marker wins.

Semantics are kept: a ``with`` block passes ``return``/``break``/``continue`` and exceptions
through unchanged; the copy is compiled from the original file's AST (so tracebacks and line
numbers match), gets the original's globals, defaults, closure cells and decorators. Generator
functions are not instrumented (a marker would stay open across each ``yield``).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import linecache
import types
from collections.abc import Iterator
from typing import Any, Callable, Optional

from torchscope.protocol import LINE_MARKER_PREFIX as MARKER_PREFIX

_MARK_NAME = "__torchscope_mark__"
_FACTORY_NAME = "__torchscope_factory__"

#: Decorators that only make sense on a class attribute; the copy is called as a plain function.
_DESCRIPTOR_DECORATORS = ("staticmethod", "classmethod", "property")


class InstrumentError(Exception):
    """The function cannot be instrumented; profiling goes on without line attribution."""


def marker_factory() -> Callable[[str], Any]:
    """The cheapest marker this torch offers: ``_RecordFunctionFast`` (≈0.3 µs), else
    ``record_function`` (≈6 µs, torch < 2.2)."""
    import torch

    marker: Callable[[str], Any] | None = getattr(
        getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None
    )
    if marker is None:
        from torch.autograd.profiler import record_function

        marker = record_function
    return marker


@contextlib.contextmanager
def markers_as(func: Callable[..., Any], factory: Callable[[str], Any]) -> Iterator[None]:
    """Inside, the marked copies of functions in ``func``'s module call ``factory`` for their
    markers (``worker/line_timing.py``'s clock); the marker before is put back afterwards."""
    namespace = inspect.unwrap(func).__globals__
    before = namespace.get(_MARK_NAME)
    namespace[_MARK_NAME] = factory
    try:
        yield
    finally:
        namespace[_MARK_NAME] = before


def _marked(statement: ast.stmt) -> ast.With:
    call = ast.Call(
        func=ast.Name(id=_MARK_NAME, ctx=ast.Load()),
        args=[ast.Constant(f"{MARKER_PREFIX}{statement.lineno}")],
        keywords=[],
    )
    marked = ast.With(items=[ast.withitem(context_expr=call)], body=[statement])
    return ast.copy_location(marked, statement)


#: Python 3.12 added ``type_params`` to defs and classes; older ASTs must not get it.
_NO_TYPE_PARAMS: dict[str, Any] = (
    {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}
)

_PASS_THROUGH = (
    ast.Global,
    ast.Nonlocal,
    ast.Pass,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


class _StatementMarker:
    """Rewrites statement lists; compound statements are marked as a whole (their header) and
    their bodies statement by statement."""

    def body(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        return [self.statement(s) for s in statements]

    def statement(self, statement: ast.stmt) -> ast.stmt:
        if isinstance(statement, _PASS_THROUGH):
            return statement
        for name in ("body", "orelse", "finalbody"):
            block = getattr(statement, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(statement, name, self.body(block))
        for handler in getattr(statement, "handlers", []) or []:
            handler.body = self.body(handler.body)
        for case in getattr(statement, "cases", []) or []:  # match statements (3.10+)
            case.body = self.body(case.body)
        return _marked(statement)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _find_def(tree: ast.AST, code: types.CodeType) -> ast.FunctionDef | ast.AsyncFunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if code.co_firstlineno in (node.lineno, first):
                return node
    raise InstrumentError(f"cannot find the source of {code.co_name} (line {code.co_firstlineno})")


def _contains_yield(statements: list[ast.stmt]) -> bool:
    """True for a generator body; yields inside nested functions or lambdas do not count."""
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _owner_class_name(func: types.FunctionType) -> Optional[str]:
    parts = func.__qualname__.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return None


def _factory_module(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    freevars: tuple[str, ...],
    class_name: Optional[str],
) -> ast.Module:
    """``def factory(): <freevars> = None; [class C:] <def>`` so the copy closes over the same
    names (``__class__`` included, for ``super()``) and private names mangle as in the original."""
    placeholders: list[ast.stmt] = [
        ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Constant(None))
        for name in freevars
        if name != "__class__"
    ]
    inner: ast.stmt = node
    if class_name is not None:
        inner = ast.ClassDef(
            name=class_name,
            bases=[],
            keywords=[],
            body=[node],
            decorator_list=[],
            **_NO_TYPE_PARAMS,
        )
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    factory = ast.FunctionDef(
        name=_FACTORY_NAME,
        args=arguments,
        body=[*placeholders, inner, ast.Return(value=ast.Constant(None))],
        decorator_list=[],
        returns=None,
        **_NO_TYPE_PARAMS,
    )
    ast.copy_location(factory, node)
    module = ast.Module(body=[factory], type_ignores=[])
    return ast.fix_missing_locations(module)


def _find_code(container: types.CodeType, name: str, firstlineno: int) -> types.CodeType:
    for const in container.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name and const.co_firstlineno == firstlineno:
                return const
            try:
                return _find_code(const, name, firstlineno)
            except InstrumentError:
                continue
    raise InstrumentError(f"compiled copy of {name} not found")


def instrument(func: Callable[..., Any]) -> Callable[..., Any]:
    """The marked copy of ``func`` (a plain function), with the original's decorators applied."""
    func = inspect.unwrap(func)
    if not isinstance(func, types.FunctionType):
        raise InstrumentError(f"{func!r} is not a Python function")
    code = func.__code__
    filename = code.co_filename
    linecache.checkcache(filename)
    source = "".join(linecache.getlines(filename, func.__globals__))
    if not source:
        raise InstrumentError(f"source of {func.__qualname__} unavailable ({filename})")
    tree = ast.parse(source, filename)
    node = _find_def(tree, code)
    if _contains_yield(node.body):
        raise InstrumentError(f"{func.__qualname__} is a generator: line markers would span yields")
    decorators = node.decorator_list
    node.decorator_list = []
    body = node.body
    head = [body[0]] if body and _is_docstring(body[0]) else []
    node.body = head + _StatementMarker().body(body[len(head) :])
    module = _factory_module(node, code.co_freevars, _owner_class_name(func))
    compiled = compile(module, filename, "exec", dont_inherit=True)
    factory_code = _find_code(compiled, _FACTORY_NAME, module.body[0].lineno)
    new_code = _find_code(factory_code, code.co_name, node.lineno)
    cells = dict(zip(code.co_freevars, func.__closure__ or ()))
    missing = [name for name in new_code.co_freevars if name not in cells]
    if missing:
        raise InstrumentError(f"{func.__qualname__}: cannot rebuild closure variables {missing}")
    func.__globals__[_MARK_NAME] = marker_factory()
    copy = types.FunctionType(
        new_code,
        func.__globals__,
        func.__name__,
        func.__defaults__,
        tuple(cells[name] for name in new_code.co_freevars),
    )
    copy.__kwdefaults__ = func.__kwdefaults__
    copy.__qualname__ = func.__qualname__
    copy.__dict__.update(func.__dict__)
    copy.__annotations__ = dict(getattr(func, "__annotations__", {}))
    return _apply_decorators(copy, decorators, func.__globals__)


def _apply_decorators(
    func: Callable[..., Any], decorators: list[ast.expr], namespace: dict[str, Any]
) -> Callable[..., Any]:
    result: Any = func
    for decorator in reversed(decorators):
        if isinstance(decorator, ast.Name) and decorator.id in _DESCRIPTOR_DECORATORS:
            continue
        expression = ast.fix_missing_locations(ast.Expression(body=decorator))
        result = eval(compile(expression, "<torchscope decorator>", "eval"), namespace)(result)
    return result  # type: ignore[no-any-return]
