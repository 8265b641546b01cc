"""Turn a call expression such as ``fn(torch.randn(64, 64), w, b)`` into a repeatable call.

The receiver and the arguments are evaluated once, in the module's namespace (with ``torch``
available even if the module imports it under another name); only the final call is repeated by
the passes. That way ``Model().forward(torch.randn(8, 3))`` builds the model and the input once.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from torchscope.protocol import call_expression_problem


class CallExpressionError(Exception):
    """The call expression is not a single call, or evaluating its parts failed."""

    def __init__(self, message: str, kind: str = "call-invalid") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class PreparedCall:
    """A callable with its evaluated arguments: ``invoke()`` is what the passes time."""

    func: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    source: str = ""

    def invoke(self) -> Any:
        try:
            return run_to_completion(self.func(*self.args, **self.kwargs))
        except SystemExit as exc:  # the job stops, the worker stays (sys.exit is BaseException)
            raise FunctionExited(
                f"the function called sys.exit({exc.code!r}) — return instead; torchscope stops "
                "the job, not the process"
            ) from None


class FunctionExited(Exception):
    """The function called ``sys.exit``."""


def _run_in_fresh_loop(coroutine: Any) -> Any:
    """``asyncio.run`` without its SIGINT handling: one new event loop per call, tasks left
    over cancelled, async generators closed. ``asyncio.run`` itself is not used because on
    Python 3.11 restoring its SIGINT handler formats ``repr()`` of the finished task — with
    its result: a 64×64 tensor's repr is ~600 ops and 2 ms, profiled as if the user's."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def run_to_completion(result: Any) -> Any:
    """A coroutine is awaited (in a fresh event loop per call), a generator or async
    generator exhausted, so that ``async def`` and generator functions do their work; the
    value of a plain call is returned as it is."""
    if inspect.iscoroutine(result):
        return _run_in_fresh_loop(result)
    if inspect.isgenerator(result):
        for _ in result:
            pass
        return None
    if inspect.isasyncgen(result):

        async def drain() -> None:
            async for _ in result:
                pass

        return _run_in_fresh_loop(drain())
    return result


def _namespace(module_globals: dict[str, Any]) -> dict[str, Any]:
    namespace = dict(module_globals)
    if "torch" not in namespace:
        import torch

        namespace["torch"] = torch
    return namespace


def _eval(node: ast.expr, namespace: dict[str, Any], what: str, source: str) -> Any:
    code = compile(ast.Expression(body=node), "<torchscope call expression>", "eval")
    try:
        return eval(code, namespace)
    except Exception as exc:
        text = ast.get_source_segment(source, node) or what
        raise CallExpressionError(
            f"evaluating {what} `{text}` of the call expression raised {type(exc).__name__}: {exc}",
            kind="call-raised",
        ) from exc


def prepare_call(source: str, module_globals: dict[str, Any]) -> PreparedCall:
    """Parse ``source`` as one call and evaluate its callee and arguments once."""
    problem = call_expression_problem(source)
    if problem is not None:
        raise CallExpressionError(problem)
    call = ast.parse(source.strip(), mode="eval").body
    assert isinstance(call, ast.Call)
    namespace = _namespace(module_globals)
    func = _eval(call.func, namespace, "the callee", source)
    if not callable(func):
        raise CallExpressionError(f"`{ast.unparse(call.func)}` is not callable")
    args: list[Any] = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            args.extend(_eval(arg.value, namespace, "an argument", source))
        else:
            args.append(_eval(arg, namespace, "an argument", source))
    kwargs: dict[str, Any] = {}
    for keyword in call.keywords:
        value = _eval(keyword.value, namespace, "an argument", source)
        if keyword.arg is None:
            kwargs.update(value)
        else:
            kwargs[keyword.arg] = value
    return PreparedCall(func, tuple(args), kwargs, source.strip())


def direct_call(func: Callable[..., Any], name: str) -> PreparedCall:
    """A function with no required parameters is called as it is."""
    return PreparedCall(func, (), {}, f"{name}()")
