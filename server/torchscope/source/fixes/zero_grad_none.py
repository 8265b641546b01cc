"""``zero-grad-none``: ``zero_grad(set_to_none=False)`` → ``zero_grad(set_to_none=True)``.

``set_to_none=True`` is the default since torch 2.0, so only an explicit ``False`` (on a
module or an optimizer) is rewritten: the gradients are then dropped instead of filled with
zeros, and the next ``backward`` writes them instead of adding into them.
"""

from __future__ import annotations

import ast

from ._source import Edit
from .base import Fix, Parsed, Site


class ZeroGradNoneFix(Fix):
    id = "zero-grad-none"
    title = "zero_grad(set_to_none=True)"
    assumes = (
        "nothing reads a gradient between zero_grad and the next backward expecting zeros "
        "(None and zeros count as the same gradient)"
    )
    answers = ("zero-grad",)

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        planned: list[tuple[Site, list[Edit]]] = []
        for node in ast.walk(parsed.func):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "zero_grad"
            ):
                continue
            flag = next((kw for kw in node.keywords if kw.arg == "set_to_none"), None)
            value = flag.value if flag is not None else (node.args[0] if node.args else None)
            if not (isinstance(value, ast.Constant) and value.value is False):
                continue
            edit = parsed.text.replace(value, "True")
            planned.append((Site(node.lineno, "set_to_none=True"), [edit]))
        return planned


FIX = ZeroGradNoneFix()
