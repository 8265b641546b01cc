"""``out-variant``: a buffer rebuilt on every pass of a loop → updated in place.

``acc = acc + x`` (``-``, ``*``, ``/``) inside a ``for``/``while`` loop allocates a fresh
tensor each time and drops the old one; ``acc += x`` writes into the one buffer. That is the
same only when nothing else can see the buffer, so it is offered only where that is provable
from the source alone:

- ``acc`` is made fresh in the function, before the loop and in the same block, by a
  ``torch`` allocator (``torch.zeros``, ``torch.empty_like``, …), and bound nowhere else;
- every other read of ``acc`` in the function is an operand of an arithmetic operator or a
  comparison (their results are new tensors), a positional argument of a ``torch`` function
  that returns a new tensor (``torch.sum``, ``torch.matmul``, …: never a view) or such a
  method (``acc.sum()``), or a ``return acc`` (the caller gets the buffer, which nothing else
  holds). A view, an ``append``, a second name, a closure or a ``yield`` makes it not apply;
- the right operand does not read ``acc``.

What remains assumed (the output check tests it on the user's inputs): the result has the
buffer's shape and dtype — broadcasting ``acc`` to a larger shape, or promoting it to a wider
dtype, raises in place or changes the outputs, and the trial then refuses the rewrite.
"""

from __future__ import annotations

import ast
from typing import Optional

from ..targets import FunctionNode
from ._source import Edit, blocks
from .base import Fix, Parsed, Site

ALLOCATORS = frozenset(
    {"zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like", "full", "full_like"}
)
#: ``torch`` functions whose result never shares the argument's memory.
FRESH_RESULTS = frozenset(
    {
        "add", "sub", "mul", "div", "sum", "mean", "prod", "matmul", "mm", "bmm", "dot",
        "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "norm", "max", "min",
        "allclose", "equal", "isfinite", "cat", "stack", "where", "clamp", "softmax",
    }
)  # fmt: skip
OPERATORS = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}
LOOPS = (ast.For, ast.While)


def _rebuild(stmt: ast.stmt) -> Optional[tuple[str, ast.BinOp]]:
    """``(name, rhs)`` when ``stmt`` is ``name = name OP expr`` and ``expr`` reads no ``name``."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.BinOp)
        and type(stmt.value.op) in OPERATORS
        and isinstance(stmt.value.left, ast.Name)
    ):
        return None
    name = stmt.targets[0].id
    right = stmt.value.right
    reads_itself = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(right))
    if stmt.value.left.id != name or reads_itself:
        return None
    return name, stmt.value


class _Reads:
    """Whether every read and write of a name in the function keeps its buffer private."""

    def __init__(self, parsed: Parsed) -> None:
        self.aliases = parsed.aliases
        self.parents: dict[int, ast.AST] = {}
        for node in ast.walk(parsed.func):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node

    def _torch(self, call: ast.Call, names: frozenset[str]) -> bool:
        full = self.aliases.full(call.func) or ""
        return full.startswith("torch.") and full[len("torch.") :] in names

    def allocates(self, stmt: ast.stmt, name: str) -> bool:
        return (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
            and isinstance(stmt.value, ast.Call)
            and self._torch(stmt.value, ALLOCATORS)
        )

    def _safe_read(self, node: ast.Name) -> bool:
        parent = self.parents.get(id(node))
        if isinstance(parent, (ast.BinOp, ast.Compare, ast.Return)):
            return True  # an operator's result is a new tensor; a return hands the buffer on
        if isinstance(parent, ast.Attribute):  # acc.sum(): a method that returns a new tensor
            call = self.parents.get(id(parent))
            return (
                parent.attr in FRESH_RESULTS and isinstance(call, ast.Call) and call.func is parent
            )
        return (
            isinstance(parent, ast.Call)
            and node in parent.args
            and self._torch(parent, FRESH_RESULTS)
        )

    def private(self, func: FunctionNode, name: str, binds: set[int]) -> bool:
        """Every ``name`` in ``func`` is a safe read, or a store of one of ``binds``."""
        for node in ast.walk(func):
            if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return False
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            if isinstance(node.ctx, ast.Load):
                if not self._safe_read(node):
                    return False
            elif id(self.parents.get(id(node))) not in binds:
                return False
        return True


class OutVariantFix(Fix):
    id = "out-variant"
    title = "update the loop's buffer in place (acc += …) instead of a fresh tensor per pass"
    assumes = (
        "the result has the buffer's shape and dtype (no broadcasting to a larger shape, no "
        "promotion to a wider dtype)"
    )
    answers = ("allocation-churn",)

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        reads = _Reads(parsed)
        planned: list[tuple[Site, list[Edit]]] = []
        for block in blocks(parsed.func):
            for i, loop in enumerate(block):
                if isinstance(loop, LOOPS):
                    planned += self._in_loop(parsed, reads, block[:i], loop)
        return sorted(planned, key=lambda p: p[0].line)

    def _in_loop(
        self, parsed: Parsed, reads: _Reads, before: list[ast.stmt], loop: ast.For | ast.While
    ) -> list[tuple[Site, list[Edit]]]:
        found: dict[str, list[tuple[ast.stmt, ast.BinOp]]] = {}
        for stmt in loop.body:
            hit = _rebuild(stmt)
            if hit is not None:
                found.setdefault(hit[0], []).append((stmt, hit[1]))
        planned: list[tuple[Site, list[Edit]]] = []
        for name, stmts in found.items():
            allocs = [s for s in before if reads.allocates(s, name)]
            if len(allocs) != 1:
                continue
            binds = {id(allocs[0]), *(id(s) for s, _ in stmts)}
            if not reads.private(parsed.func, name, binds):
                continue
            for stmt, binop in stmts:
                start, end = parsed.text.span(binop.right)
                right = parsed.text.text[start:end]
                edit = parsed.text.replace(stmt, f"{name} {OPERATORS[type(binop.op)]} {right}")
                planned.append((Site(stmt.lineno, f"{name} updated in place"), [edit]))
        return planned


FIX = OutVariantFix()
