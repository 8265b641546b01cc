"""``fused-optimizer``: ``torch.optim.Adam``/``AdamW``/``SGD`` built without ``foreach`` or
``fused`` → ``foreach=True`` on the CPU, ``fused=True`` on CUDA.

The constructor is found in the function or in a module-level assignment of a name the
function reads (where training scripts usually build their optimizer). The per-parameter
Python loop of the default becomes one multi-tensor kernel per step of the update.
"""

from __future__ import annotations

import ast

from ._source import Edit
from .base import Fix, Parsed, Site

OPTIMIZERS = frozenset(
    f"torch.optim.{name}" for name in ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad")
)


class FusedOptimizerFix(Fix):
    id = "fused-optimizer"
    title = "multi-tensor optimizer (foreach=True on CPU, fused=True on CUDA)"
    assumes = (
        "all parameters are on one device and dense; the update is the same up to the "
        "order of floating-point operations"
    )
    answers = ("many-calls", "dispatch-gap", "small-kernels")

    def _candidates(self, parsed: Parsed) -> list[ast.AST]:
        func = parsed.func
        args = func.args
        # A parameter or local of the same name shadows the module's: reading ``optimizer``
        # in ``def train_step(model, optimizer, ...)`` is not the module-level optimizer.
        local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        local |= {
            n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        read = {
            n.id
            for n in ast.walk(func)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local
        }
        roots: list[ast.AST] = [parsed.func]
        for stmt in parsed.tree.body:
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in read for t in stmt.targets
            ):
                roots.append(stmt)
        return roots

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        keyword = "fused" if device == "cuda" else "foreach"
        planned: list[tuple[Site, list[Edit]]] = []
        for root in self._candidates(parsed):
            for node in ast.walk(root):
                if not (
                    isinstance(node, ast.Call) and parsed.aliases.full(node.func) in OPTIMIZERS
                ):
                    continue
                if any(kw.arg in ("foreach", "fused", None) for kw in node.keywords):
                    continue
                start, end = parsed.text.span(node)
                inside = parsed.text.text[start : end - 1].rstrip()
                comma = "" if inside.endswith(("(", ",")) else ","
                space = "" if inside.endswith("(") else " "
                at = start + len(inside)  # after the last argument, before ")"
                edit = Edit(at, at, f"{comma}{space}{keyword}=True")
                planned.append((Site(node.lineno, f"{keyword}=True"), [edit]))
        return planned


FIX = FusedOptimizerFix()
