"""``sdpa``: hand-written attention → ``F.scaled_dot_product_attention``.

Matches ``softmax(q @ k.transpose(-2, -1) / s, dim=-1) @ v`` — also with ``* s`` or no scale,
``torch.matmul``, ``k.mT``, a ``masked_fill(mask, -inf)`` or an added float mask before the
softmax — written in one expression or as a chain of assignments each read once (those
statements are folded into the call and deleted). A causal mask built in the function
(``triu(ones(L, L, dtype=bool), diagonal=1)``, or ``tril(ones(L, L)) == 0``) becomes
``is_causal=True``. The scale is passed as written (``scale=1 / s``), so nothing is assumed
about the head size.

The canonical GPT attention (nanoGPT's manual path, minGPT) is matched too: a dropout module
on the weights between softmax and ``@ v`` (``att = self.attn_dropout(att)``) becomes
``dropout_p=(self.attn_dropout.p if self.training else 0.0)`` — its own attribute, no literal
— and the trial compares with dropout off (SDPA draws its mask differently); a causal mask
read from a buffer (``masked_fill(self.bias[:, :, :T, :T] == 0, -inf)`` or
``masked_fill(~self.mask[:T, :T], -inf)``) becomes ``is_causal=True``, with a trial condition
that the buffer really is lower-triangular, failing which the trial measures the ``attn_mask``
rewrite instead (``Rewrite.fallback``).

The module form (vit-pytorch's attention) is matched too: ``self.attend(dots)`` where the
class built ``self.attend = nn.Softmax(dim=-1)``, and a dropout attribute the class built as
``nn.Dropout`` whatever its name (``source/fixes/_source.submodules`` reads the class).
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Optional

from ._source import Chain, Edit, FixError, blocks, submodules
from .base import Fix, Parsed, Rewrite, Site, name_of, parse

SOFTMAX = ("torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax")
SOFTMAX_MODULES = ("torch.nn.Softmax", "torch.nn.modules.activation.Softmax")
DROPOUT_MODULES = ("torch.nn.Dropout", "torch.nn.modules.dropout.Dropout")
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


@dataclasses.dataclass
class _Found:
    """What a plan folded that its trial must know: the causal buffers it read (``self.bias``)
    and whether it folded a dropout. ``causal_buffers`` False plans the ``attn_mask``
    rewrite instead of ``is_causal``."""

    causal_buffers: bool = True
    buffers: set[str] = dataclasses.field(default_factory=set)
    dropout: bool = False


def _buffer_slice(node: ast.expr) -> Optional[str]:
    """``self.bias`` from ``self.bias[:, :, :T, :T]`` / ``self.mask[:T, :T]`` (the last two
    dimensions sliced from 0 to the same length, any others whole), else None."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)):
        return None
    base = node.value
    if not (isinstance(base.value, ast.Name) and base.value.id == "self"):
        return None
    dims = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if len(dims) < 2 or not all(isinstance(d, ast.Slice) and d.lower is None for d in dims):
        return None
    ends = [d.upper for d in dims if isinstance(d, ast.Slice)]
    whole = all(e is None for e in ends[:-2])
    last = [ast.unparse(e) if e is not None else "" for e in ends[-2:]]
    if not whole or last[0] != last[1] or any(getattr(d, "step", None) for d in dims):
        return None
    return ast.unparse(base)


class _Match:
    def __init__(self, parsed: Parsed, chain: Chain, found: _Found) -> None:
        self.aliases = parsed.aliases
        self.chain = chain
        self.found = found
        # The module form (a ViT's ``self.attend = nn.Softmax(dim=-1)``, ``nn.Dropout``).
        self.modules = {
            name: self.aliases.full(call.func)
            for name, call in submodules(parsed.tree, parsed.func, parsed.aliases).items()
            if self.aliases.full(call.func) in DROPOUT_MODULES
            or (
                self.aliases.full(call.func) in SOFTMAX_MODULES
                and _is_last_dim(_keyword(call, "dim", 0))
            )
        }

    def module_call(self, node: ast.expr, classes: tuple[str, ...]) -> Optional[ast.expr]:
        """The argument of ``self.<name>(x)`` where the class built ``self.<name>`` as one of
        ``classes`` (in ``__init__`` or any of its methods), else None."""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
            and self.modules.get(node.func.attr) in classes
            and len(node.args) == 1
            and not node.keywords
        ):
            return node.args[0]
        return None

    def causal_buffer(self, mask: ast.expr) -> Optional[tuple[str, ast.expr]]:
        """A mask from a causal buffer: ``(buffer, attn_mask)``, with the boolean mask that
        says where to attend (``buffer[...] != 0`` / ``buffer[...]``), else None."""
        if (
            isinstance(mask, ast.Compare)
            and len(mask.ops) == 1
            and isinstance(mask.ops[0], ast.Eq)
            and ast.unparse(mask.comparators[0]) in ("0", "False")
        ):
            buffer = _buffer_slice(mask.left)
            keep = ast.Compare(mask.left, [ast.NotEq()], [ast.Constant(0)])
            return (buffer, keep) if buffer else None
        if isinstance(mask, ast.UnaryOp) and isinstance(mask.op, ast.Invert):
            buffer = _buffer_slice(mask.operand)
            return (buffer, mask.operand) if buffer else None
        return None

    def dropout(self, node: ast.expr) -> Optional[tuple[ast.expr, ast.expr]]:
        """``self.attn_dropout(w)``: ``(w, dropout_p)``, the probability read from the module
        (``self.attn_dropout.p if self.training else 0.0``), else None."""
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (
                "drop" in node.func.attr.lower()
                or self.module_call(node, DROPOUT_MODULES) is not None
            )
            and isinstance(node.func.value, ast.Name)
            and self.aliases.full(node.func) is None  # a module's attribute, not F.dropout
            and len(node.args) == 1
            and not node.keywords
        ):
            return None
        owner = node.func.value.id
        text = f"({ast.unparse(node.func)}.p if {owner}.training else 0.0)"
        return node.args[0], ast.parse(text, mode="eval").body

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
        module_form = self.module_call(node, SOFTMAX_MODULES)
        if module_form is not None:
            return module_form
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
    parts: dict[str, ast.expr] = {"v": value}
    dropped = m.dropout(weights)
    if dropped is not None:
        weights, parts["dropout_p"] = dropped
        weights, at = m.chain.follow(weights, at)
    scores = m.softmax_input(weights)
    if scores is None:
        return None
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
        buffer = m.causal_buffer(followed)
        if m.is_causal(followed):
            parts["is_causal"] = ast.Constant(True)
        elif buffer is not None:
            m.found.buffers.add(buffer[0])
            if m.found.causal_buffers:
                parts["is_causal"] = ast.Constant(True)
            else:
                parts["attn_mask"] = buffer[1]
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
    """The call, spelled as written: ``dropout_p=(… if self.training else 0.0)`` keeps its
    parentheses (``ast.unparse`` would drop them)."""
    func = name_of(parsed.aliases, SDPA, SDPA)
    args = [ast.unparse(parts[name]) for name in ("q", "k", "v")]
    for name in ("attn_mask", "dropout_p", "is_causal", "scale"):
        if name in parts:
            text = ast.unparse(parts[name])
            args.append(
                f"{name}=({text})" if isinstance(parts[name], ast.IfExp) else f"{name}={text}"
            )
    return f"{func}({', '.join(args)})"


class SdpaFix(Fix):
    id = "sdpa"
    title = "use F.scaled_dot_product_attention"
    assumes = (
        "softmax is over the last dimension, the scale is a Python number, a masked_fill "
        "mask is boolean (True = masked), a triu/tril mask is as long as the sequence, and a "
        "causal buffer is lower-triangular (checked when tried)"
    )
    answers = ("hot-op", "memory-bound-chain", "allocation-churn", "many-calls")

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        return self._plan(parsed, _Found())

    def rewrite(self, source: str, function: str, device: str) -> Optional[Rewrite]:
        """The ``is_causal`` rewrite with what its trial checks: each causal buffer
        lower-triangular (else the ``attn_mask`` rewrite, ``fallback``), dropout off."""
        if device not in self.devices:
            return None
        try:
            parsed = parse(source, function)
            found = _Found()
            rewrite = self.rewrite_planned(parsed, self._plan(parsed, found))
            if rewrite is None:
                return None
            rewrite = dataclasses.replace(rewrite, dropout_off=found.dropout)
            cls = function.rsplit(".", 1)[0] if "." in function else ""
            if not found.buffers:
                return rewrite
            fallback = self.rewrite_planned(parsed, self._plan(parsed, _Found(False)))
        except FixError:
            return None
        conditions = tuple(
            {"kind": "lower-triangular", "class": cls, "expr": b, "instead": "attn_mask"}
            for b in sorted(found.buffers)
        )
        if fallback is not None:
            fallback = dataclasses.replace(fallback, dropout_off=found.dropout)
        return dataclasses.replace(rewrite, conditions=conditions, fallback=fallback)

    def _plan(self, parsed: Parsed, found: _Found) -> list[tuple[Site, list[Edit]]]:
        planned: list[tuple[Site, list[Edit]]] = []
        for block in blocks(parsed.func):
            for index, stmt in enumerate(block):
                if not isinstance(stmt, SIMPLE):
                    continue  # a loop or branch: its own blocks are visited on their own
                for node in ast.walk(stmt):
                    if not isinstance(node, (ast.BinOp, ast.Call)):
                        continue
                    chain = Chain(parsed.func, block)
                    parts = _attention(_Match(parsed, chain, found), node, index)
                    if parts is None:
                        continue
                    found.dropout = found.dropout or "dropout_p" in parts
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
