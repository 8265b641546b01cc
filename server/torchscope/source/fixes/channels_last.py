"""``channels-last``: a function that runs a convolutional model on a 4-D input → the model and
the input in ``torch.channels_last`` (NHWC) memory format.

cuDNN's tensor-core convolutions and oneDNN's CPU convolutions are written for NHWC; in NCHW
they transpose on every call (1.4-1.5× on this project's 2-core CPU for two 3×3 convolutions,
see docs/findings.md). Offered where the function calls a parameter named like a model
(``model``, ``net``, ``encoder``…) on another parameter, the file mentions a 2-D convolution
(``Conv2d``/``conv2d``), and ``channels_last`` is not used already. Two statements go at the
top of the body: the model converted in place (``Module.to`` keeps the object; once converted,
later calls cost a check per parameter) and the input made NHWC. A 3-D input raises and the
trial says so; on a CPU without oneDNN gains the measurement says "not faster".
"""

from __future__ import annotations

import ast

from ._source import Edit
from .base import Fix, Parsed, Site, name_of
from .inference_mode import MODEL_NAMES


def _model_call(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str, int] | None:
    """(model parameter, input parameter, line) of the first ``model(x, …)`` call."""
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    for node in ast.walk(func):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
            continue
        model, first = node.func.id, node.args[0]
        if model not in params or not any(word in model.lower() for word in MODEL_NAMES):
            continue
        if isinstance(first, ast.Name) and first.id in params and first.id != model:
            return model, first.id, node.lineno
    return None


class ChannelsLastFix(Fix):
    id = "channels-last"
    title = "model and input in torch.channels_last"
    assumes = (
        "the input is a 4-D image batch and the caller does not rely on the model's "
        "parameters staying contiguous in NCHW (the conversion is in place)"
    )
    answers = ("hot-op", "low-efficiency-gemm")

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        func = parsed.func
        source = parsed.text.text
        if "conv2d" not in source.lower() or "channels_last" in source:
            return []
        found = _model_call(func)
        if found is None or func.body[0].lineno == func.lineno:  # a one-line def
            return []
        model, x, line = found
        fmt = name_of(parsed.aliases, "torch.channels_last", "torch.channels_last")
        first = func.body[0]
        doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        indent = parsed.text.indent_of(first)
        lines = [
            f"{model} = {model}.to(memory_format={fmt})",
            f"{x} = {x}.contiguous(memory_format={fmt})",
        ]
        if doc:
            edit = parsed.text.insert_after(first, lines, indent)
        else:
            at = parsed.text.offset(first.lineno, 0)
            edit = Edit(at, at, "".join(f"{indent}{text}\n" for text in lines))
        return [(Site(line, f"{model} and {x} in channels_last"), [edit])]


FIX = ChannelsLastFix()
