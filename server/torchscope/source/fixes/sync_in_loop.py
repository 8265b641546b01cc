"""``sync-in-loop``: ``results.append(t.item())`` (or ``.tolist()``, ``.cpu()``) in a loop →
collect the tensors, and one transfer after the loop.

Each ``.item()`` waits for the GPU to finish everything queued before it; collected and
stacked, the loop queues its work without waiting and pays one transfer. On the CPU there is
no queue to wait for and stacking costs more than the ``.item()`` calls it saves (measured:
2000 ``.item()`` 36 ms, collect-and-stack 41 ms), so the fix is offered on CUDA only.

Matched, in one block: ``L = []``, then a ``for`` loop (no ``else``, no ``return`` or
``yield`` inside) whose body appends ``E.item()`` / ``E.tolist()`` / ``E.cpu()`` to ``L``
and reads ``L`` nowhere else; ``L`` is not read between the two statements.
"""

from __future__ import annotations

import ast
from typing import Optional

from ._source import Edit, loads
from .base import Fix, Parsed, Site, name_of

#: transfer → how the collected list becomes what the loop built.
AFTER = {
    "item": "{L} = {torch}.stack({L}).flatten().tolist() if {L} else []",
    "tolist": "{L} = {torch}.stack({L}).tolist() if {L} else []",
    "cpu": "{L} = list({torch}.stack({L}).cpu().unbind(0)) if {L} else []",
}


def _append(stmt: ast.stmt) -> Optional[tuple[str, ast.Call, ast.Call]]:
    """``L.append(E.item())`` → (L, the append call, the transfer call)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    if not (
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and isinstance(call.func.value, ast.Name)
        and len(call.args) == 1
        and not call.keywords
    ):
        return None
    inner = call.args[0]
    if (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute)
        and inner.func.attr in AFTER
        and not inner.args
        and not inner.keywords
    ):
        return call.func.value.id, call, inner
    return None


def _empty_list_before(block: list[ast.stmt], index: int, name: str) -> bool:
    for stmt in reversed(block[:index]):
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name
        ):
            return isinstance(stmt.value, ast.List) and not stmt.value.elts
        if loads(stmt, name) or any(
            isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)
        ):
            return False
    return False


def _leaves_early(loop: ast.For) -> bool:
    return any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) for n in ast.walk(loop))


class SyncInLoopFix(Fix):
    id = "sync-in-loop"
    title = "one transfer after the loop instead of one per iteration"
    assumes = (
        "the collected tensors share one shape, dtype and device, and nothing catches an "
        "exception raised inside the loop"
    )
    answers = ("sync", "dispatch-gap", "launch-delay")
    devices = ("cuda",)

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        from ._source import blocks

        torch = name_of(parsed.aliases, "torch", "torch")
        planned: list[tuple[Site, list[Edit]]] = []
        for block in blocks(parsed.func):
            for index, loop in enumerate(block):
                if not isinstance(loop, ast.For) or loop.orelse or _leaves_early(loop):
                    continue
                for stmt in loop.body:
                    found = _append(stmt)
                    if found is None:
                        continue
                    name, _, transfer = found
                    if loads(loop, name) != 1 or not _empty_list_before(block, index, name):
                        continue
                    assert isinstance(transfer.func, ast.Attribute)
                    text = parsed.text
                    edits = [
                        text.replace(transfer, ast.unparse(transfer.func.value)),
                        text.insert_after(
                            loop,
                            [AFTER[transfer.func.attr].format(L=name, torch=torch)],
                            text.indent_of(loop),
                        ),
                    ]
                    what = f".{transfer.func.attr}() once after the loop"
                    planned.append((Site(stmt.lineno, what), edits))
                    break
        return planned


FIX = SyncInLoopFix()
