"""``sdpa``: hand-written attention → ``F.scaled_dot_product_attention``.

Matches ``softmax(q @ k.transpose(-2, -1) / s, dim=-1) @ v`` — also with ``* s`` or no scale,
``torch.matmul``, ``k.mT``, a ``masked_fill(mask, -inf)`` or an added float mask before the
softmax — written in one expression or as a chain of assignments each read once (those
statements are folded into the call and deleted). A causal mask built in the function
(``triu(ones(L, L, dtype=bool), diagonal=1)``, or ``tril(ones(L, L)) == 0``) becomes
``is_causal=True``. The scale is passed as written (``scale=1 / s``), so nothing is assumed
about the head size. A dropout between softmax and ``@ v`` is not matched.
"""

from __future__ import annotations

import ast
from typing import Optional

from ._source import Chain, Edit, FixError, blocks
from .base import Fix, Parsed, Site, name_of

SOFTMAX = ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax")
MATMUL = ("torch.matmul",)
SDPA = "torch.nn.functional.scaled_dot_product_attention"
SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)


def _is_last_dim(node: Optional[ast.expr]) -> bool:
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and node.operand.value == 1
    )


def _keyword(call: ast.Call, name: str, position: int) -> Optional[ast.expr]:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _is_minus_inf(node: ast.expr) -> bool:
    text = ast.unparse(node).replace(" ", "").replace("'", '"')
    return text in (
        'float("-inf")',
        '-float("inf")',
        "-math.inf",
        "-torch.inf",
        "-float('inf')",
        "float('-inf')",
    ) or (text.startswith("torch.finfo(") and text.endswith(").min"))


class _Match:
    def __init__(self, parsed: Parsed, chain: Chain) -> None:
        self.aliases = parsed.aliases
        self.chain = chain

    def call_to(self, node: ast.expr, names: tuple[str, ...]) -> Optional[ast.Call]:
        if isinstance(node, ast.Call) and self.aliases.full(node.func) in names:
            return node
        return None

    def matmul(self, node: ast.expr) -> Optional[tuple[ast.expr, ast.expr]]:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return node.left, node.right
        call = self.call_to(node, MATMUL)
        if call is not None and len(call.args) == 2 and not call.keywords:
            return call.args[0], call.args[1]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "matmul"
            and len(node.args) == 1
            and self.aliases.full(node.func) is None
        ):
            return node.func.value, node.args[0]
        return None

    def softmax_input(self, node: ast.expr) -> Optional[ast.expr]:
        call = self.call_to(node, SOFTMAX)
        if (
            call is not None
            and call.args
            and _is_last_dim(_keyword(call, "dim", 1))
            and all(kw.arg == "dim" for kw in call.keywords)
        ):
            return call.args[0]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "softmax"
            and self.aliases.full(node.func) is None
            and _is_last_dim(_keyword(node, "dim", 0))
            and all(kw.arg == "dim" for kw in node.keywords)
        ):
            return node.func.value
        return None

    def key(self, node: ast.expr) -> Optional[ast.expr]:
        """``k`` from ``k.transpose(-2, -1)``, ``k.transpose(-1, -2)``, ``k.mT``."""
        if isinstance(node, ast.Attribute) and node.attr == "mT":
            return node.value
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("transpose", "swapaxes")
            and len(node.args) == 2
            and not node.keywords
        ):
            dims = sorted(ast.unparse(a).replace(" ", "") for a in node.args)
            if dims == ["-1", "-2"]:
                return node.func.value
        return None

    def is_causal(self, node: ast.expr) -> bool:
        """``triu(ones(L, L, dtype=bool), diagonal=1)`` or ``tril(ones(L, L)) == 0``."""
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], ast.Eq)
            and ast.unparse(node.comparators[0]) in ("0", "False")
        ):
            return self._triangle(node.left, "tril", "0")
        return self._triangle(node, "triu", "1")

    def _triangle(self, node: ast.expr, which: str, diagonal: str) -> bool:
        if not isinstance(node, ast.Call):
            return False
        if self.aliases.full(node.func) == f"torch.{which}" and node.args:
            inner, diag = node.args[0], _keyword(node, "diagonal", 1)
        elif isinstance(node.func, ast.Attribute) and node.func.attr == which:
            inner, diag = node.func.value, _keyword(node, "diagonal", 0)
        else:
            return False
        if (ast.unparse(diag) if diag is not None else "0") != diagonal:
            return False
        ones = self.call_to(inner, ("torch.ones",))
        if ones is None or len(ones.args) != 2:
            return False
        return ast.unparse(ones.args[0]) == ast.unparse(ones.args[1])


def _attention(m: _Match, node: ast.expr, at: int) -> Optional[dict[str, ast.expr]]:
    """The parts of ``softmax(q @ kᵀ / s [+ mask], -1) @ v`` at ``node``, or None."""
    outer = m.matmul(node)
    if outer is None:
        return None
    weights, value = outer
    weights, at = m.chain.follow(weights, at)
    scores = m.softmax_input(weights)
    if scores is None:
        return None
    parts: dict[str, ast.expr] = {"v": value}
    scores, at = m.chain.follow(scores, at)
    if (
        isinstance(scores, ast.Call)
        and isinstance(scores.func, ast.Attribute)
        and scores.func.attr == "masked_fill"
        and len(scores.args) == 2
        and _is_minus_inf(scores.args[1])
    ):
        mask = scores.args[0]
        saved = set(m.chain.consumed)
        followed, _ = m.chain.follow(mask, at)
        if m.is_causal(followed):
            parts["is_causal"] = ast.Constant(True)
        else:
            m.chain.consumed = saved
            parts["attn_mask"] = ast.UnaryOp(ast.Invert(), mask)
        scores, at = m.chain.follow(scores.func.value, at)
    elif isinstance(scores, ast.BinOp) and isinstance(scores.op, ast.Add):
        parts["attn_mask"] = scores.right
        scores, at = m.chain.follow(scores.left, at)
    if isinstance(scores, ast.BinOp) and isinstance(scores.op, (ast.Div, ast.Mult)):
        scale = scores.right
        divide = isinstance(scores.op, ast.Div)
        parts["scale"] = ast.BinOp(ast.Constant(1), ast.Div(), scale) if divide else scale
        scores, at = m.chain.follow(scores.left, at)
    else:
        parts["scale"] = ast.Constant(1.0)
    inner = m.matmul(scores)
    if inner is None:
        return None
    key = m.key(inner[1])
    if key is None:
        return None
    parts["q"], parts["k"] = inner[0], key
    return parts


def _call(parsed: Parsed, parts: dict[str, ast.expr]) -> str:
    func = ast.parse(name_of(parsed.aliases, SDPA, SDPA), mode="eval").body
    keywords = [
        ast.keyword(arg=name, value=parts[name])
        for name in ("attn_mask", "is_causal", "scale")
        if name in parts
    ]
    call = ast.Call(func=func, args=[parts["q"], parts["k"], parts["v"]], keywords=keywords)
    return ast.unparse(call)


class SdpaFix(Fix):
    id = "sdpa"
    title = "use F.scaled_dot_product_attention"
    assumes = (
        "softmax is over the last dimension, the scale is a Python number, a masked_fill "
        "mask is boolean (True = masked), and a triu/tril mask is as long as the sequence"
    )
    answers = ("hot-op", "memory-bound-chain", "allocation-churn", "many-calls")

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        planned: list[tuple[Site, list[Edit]]] = []
        for block in blocks(parsed.func):
            for index, stmt in enumerate(block):
                if not isinstance(stmt, SIMPLE):
                    continue  # a loop or branch: its own blocks are visited on their own
                for node in ast.walk(stmt):
                    if not isinstance(node, (ast.BinOp, ast.Call)):
                        continue
                    chain = Chain(parsed.func, block)
                    parts = _attention(_Match(parsed, chain), node, index)
                    if parts is None:
                        continue
                    try:
                        edits = [parsed.text.replace(node, _call(parsed, parts))]
                        edits += [parsed.text.delete_statement(block[j]) for j in chain.consumed]
                    except FixError:
                        continue
                    first = min([stmt.lineno, *(block[j].lineno for j in chain.consumed)])
                    planned.append((Site(first, "attention → scaled_dot_product_attention"), edits))
                    break
        return planned


FIX = SdpaFix()
