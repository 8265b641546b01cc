"""``pinned-transfer``: ``x.to(device)`` / ``x.cuda()`` of a host tensor → ``x.pin_memory()
.to(device, non_blocking=True)``.

A copy from pageable host memory is staged through a pinned buffer by the driver and blocks
the CPU until it is done (``pageable-copy``); from pinned memory it is one DMA the CPU need not
wait for. Offered on CUDA only (on a CPU there is no transfer to speed up), for ``.to(...)``
whose device is a ``"cuda…"`` string, a name or attribute with ``device``/``cuda`` in it, or a
``torch.device(…)`` call, and for ``.cuda()``; never where ``non_blocking`` is already given,
and never on a receiver named like a model (``model.to(device)`` moves parameters, once).
Whether pinning per call pays (``pin_memory()`` copies the tensor once more on the host) is
what the measurement decides: a slower rewrite is never offered as an edit.
"""

from __future__ import annotations

import ast

from ._source import Edit
from .base import Fix, Parsed, Site
from .inference_mode import MODEL_NAMES


def _names_a_device(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.startswith("cuda")
    if isinstance(node, ast.Name):
        return "device" in node.id.lower() or "cuda" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "device" in node.attr.lower() or "cuda" in node.attr.lower()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "device"
    return False


def _a_model(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return any(word in name.lower() for word in MODEL_NAMES)


def _transfer(node: ast.AST) -> ast.Call | None:
    """The call when it is a host → device transfer this fix rewrites."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    if any(kw.arg == "non_blocking" for kw in node.keywords) or _a_model(node.func.value):
        return None
    if node.func.attr == "cuda":
        return node if not node.args else None
    if node.func.attr != "to":
        return None
    target = node.args[0] if node.args else None
    target = next((kw.value for kw in node.keywords if kw.arg == "device"), target)
    return node if target is not None and _names_a_device(target) else None


class PinnedTransferFix(Fix):
    id = "pinned-transfer"
    title = "pin_memory() + non_blocking=True for host → device copies"
    assumes = (
        "the tensor is on the host (pin_memory() of a CUDA tensor raises) and nothing reads "
        "the device copy on another stream before the current stream reaches it"
    )
    answers = ("pageable-copy", "sync")
    devices = ("cuda",)

    def plan(self, parsed: Parsed, device: str) -> list[tuple[Site, list[Edit]]]:
        planned: list[tuple[Site, list[Edit]]] = []
        for node in ast.walk(parsed.func):
            call = _transfer(node)
            if call is None:
                continue
            assert isinstance(call.func, ast.Attribute)
            _, receiver_end = parsed.text.span(call.func.value)
            _, call_end = parsed.text.span(call)
            bare = not (call.args or call.keywords)
            flag = "non_blocking=True" if bare else ", non_blocking=True"
            edits = [
                Edit(receiver_end, receiver_end, ".pin_memory()"),
                Edit(call_end - 1, call_end - 1, flag),
            ]
            planned.append((Site(call.lineno, f"pinned, non-blocking .{call.func.attr}()"), edits))
        return planned


FIX = PinnedTransferFix()
