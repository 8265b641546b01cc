"""``foreach``: a Python loop of in-place elementwise ops over a list of tensors →
``torch._foreach_*_`` over the whole list, one call per op.

Matched: ``for t in ts:`` (or ``for t, u in zip(ts, us):``, ``ts``/``us`` plain names) with
no ``else``, whose body is only in-place calls on ``t`` (``t.mul_(a)``, ``t.add_(u,
alpha=a)``, ``t.zero_()``…) whose other arguments are ``u`` or expressions that read neither
loop name. Op by op over the list instead of tensor by tensor: the same result when the
tensors of ``ts`` do not overlap in memory.
"""

from __future__ import annotations

import ast
from typing import Optional

from ._source import Edit, loads
from .base import Fix, Parsed, Site, name_of

#: in-place tensor method → its ``torch._foreach_*`` twin.
OPS = {
    name: f"_foreach_{name}"
    for name in (
        "add_",
        "sub_",
        "mul_",
        "div_",
        "zero_",
        "sqrt_",
        "exp_",
        "neg_",
        "abs_",
        "reciprocal_",
        "clamp_min_",
        "clamp_max_",
        "addcmul_",
        "addcdiv_",
        "lerp_",
    )
}


def _loop_names(loop: ast.For) -> Optional[tuple[list[str], list[str]]]:
    """``(loop names, lists)``: ``([t], [ts])`` or ``([t, u], [ts, us])``."""
    if isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Name):
        return [loop.target.id], [loop.iter.id]
    if (
        isinstance(loop.target, ast.Tuple)
        and all(isinstance(e, ast.Name) for e in loop.target.elts)
        and isinstance(loop.iter, ast.Call)
        and isinstance(loop.iter.func, ast.Name)
        and loop.iter.func.id == "zip"
        and not loop.iter.keywords
        and all(isinstance(a, ast.Name) for a in loop.iter.args)
        and len(loop.iter.args) == len(loop.target.elts)
    ):
        names = [e.id for e in loop.target.elts]  # type: ignore[attr-defined]
        return names, [a.id for a in loop.iter.args]  # type: ignore[attr-defined]
    return None


def _call(stmt: ast.stmt, names: list[str], lists: list[str], torch: str) -> Optional[str]:
    """``torch._foreach_mul_(ts, a)`` for ``t.mul_(a)``, or None."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in OPS
        and isinstance(func.value, ast.Name)
        and func.value.id == names[0]
    ):
        return None
    args: list[ast.expr] = [ast.Name(lists[0])]
    for arg in [*call.args, *(kw.value for kw in call.keywords)]:
        if isinstance(arg, ast.Name) and arg.id in names[1:]:
            continue
        if any(loads(arg, n) for n in names):
            return None
    for arg in call.args:
        if isinstance(arg, ast.Name) and arg.id in names[1:]:
            args.append(ast.Name(lists[names.index(arg.id)]))
        else:
            args.append(arg)
    if any(isinstance(kw.value, ast.Name) and kw.value.id in names for kw in call.keywords):
        return None
    new = ast.Call(ast.Attribute(ast.Name(torch), OPS[func.attr]), args, call.keywords)
    return ast.unparse(new)


class ForeachFix(Fix):
    id = "foreach"
    title = "torch._foreach_* over the list instead of a Python loop"
    assumes = "the tensors of the list do not overlap in memory (no views of one another)"
    answers = ("many-calls", "dispatch-gap", "small-kernels")

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        from ._source import blocks

        torch = name_of(parsed.aliases, "torch", "torch")
        planned: list[tuple[Site, list[Edit]]] = []
        for block in blocks(parsed.func):
            for loop in block:
                if not isinstance(loop, ast.For) or loop.orelse:
                    continue
                found = _loop_names(loop)
                if found is None:
                    continue
                calls = [_call(stmt, *found, torch) for stmt in loop.body]
                if not calls or any(c is None for c in calls):
                    continue
                indent = parsed.text.indent_of(loop)
                text = "\n".join(f"{indent}{c}" for c in calls if c is not None)
                start, end = parsed.text.span(loop)
                line_start = start - len(indent)
                edit = Edit(line_start, end, text)
                planned.append((Site(loop.lineno, f"{len(calls)} foreach call(s)"), [edit]))
        return planned


FIX = ForeachFix()
