"""``inference-mode``: an inference function without ``torch.inference_mode()`` → the decorator.

Offered where the function runs a model — it is a method, or a parameter is named like one
(``model``, ``net``, ``module``, ``encoder``…) — and does nothing that needs autograd: no
``backward``, ``autograd.grad``, optimizer ``step``/``zero_grad``, ``requires_grad``, and no
``no_grad``/``inference_mode``/``enable_grad`` already. The decorator goes right above the
``def`` (inside any other decorator, so ``@staticmethod`` and friends still wrap a function).

The source cannot show that no caller differentiates through the function, so every trial
checks it on the call (the ``no-grad`` condition): a call whose outputs require grad is
``changes autograd``, one with a module in training mode ``no evidence`` — the rewrite is
offered only where the call ran without grad, or with every module in eval mode and outputs
that do not require grad.
"""

from __future__ import annotations

import ast

from ._source import Edit
from .base import Fix, Parsed, Site, name_of

GRAD_WORDS = frozenset(
    {"backward", "grad", "step", "zero_grad", "requires_grad", "requires_grad_", "retain_grad"}
)
MODES = frozenset({"no_grad", "inference_mode", "enable_grad", "set_grad_enabled"})
MODEL_NAMES = ("model", "net", "module", "encoder", "decoder", "layer", "policy", "backbone")


def _needs_autograd(func: ast.AST) -> bool:
    for node in ast.walk(func):
        if isinstance(node, ast.Attribute) and node.attr in GRAD_WORDS | MODES:
            return True
        if isinstance(node, ast.Name) and node.id in MODES:
            return True
    return False


def _runs_a_model(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    names = [a.arg.lower() for a in [*func.args.posonlyargs, *func.args.args]]
    return bool(names) and (
        names[0] == "self" or any(word in n for n in names for word in MODEL_NAMES)
    )


class InferenceModeFix(Fix):
    id = "inference-mode"
    title = "decorate with @torch.inference_mode()"
    assumes = (
        "nothing differentiates through the function: no caller calls backward on what it "
        "returns or modifies its results in place outside inference mode"
    )
    answers = ("dispatch-gap", "many-calls", "hot-op")
    # The source cannot tell whether a caller differentiates through the function: the
    # trial's call must (it ran without grad, or every module in eval mode and no output
    # requiring grad), else ``--try`` refuses it (``worker/trial_check.no_grad_evidence``).
    conditions = ({"kind": "no-grad"},)

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        func = parsed.func
        if isinstance(func, ast.AsyncFunctionDef) or _needs_autograd(func):
            return []
        if not _runs_a_model(func) or any(
            isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(func)
        ):
            return []
        decorator = name_of(parsed.aliases, "torch.inference_mode", "torch.inference_mode")
        text = parsed.text
        at = text.offset(func.lineno, 0)
        indent = text.indent_of(func)
        edit = Edit(at, at, f"{indent}@{decorator}()\n")
        return [(Site(func.lineno, "@torch.inference_mode() on the def"), [edit])]


FIX = InferenceModeFix()
