"""What a measured fix's check compares (issue 39): not just the values the two sides return,
but what the program depends on.

After each side was called once from the same seed (``jobs/diff.py``), in order:

- ``outputs``: every tensor and number returned — values (tolerance by dtype), dtype, shape,
  device (``worker/outputs.py``);
- ``requires_grad``: each returned tensor's flag — an original output that requires grad and a
  rewrite's that does not is ``changes autograd``;
- ``grads``: the ``.grad`` the call left on every parameter (a training step's backward), then,
  where an original output requires grad, one backward pass on each side with the same seeded
  cotangents (``torch.autograd.grad``: nothing accumulates into ``.grad``), comparing the
  gradients of every tensor input that requires grad and every parameter (a gradient's
  tolerance is against its largest magnitude: ``outputs.differs(summed=True)``);
- ``parameters``: their values after the call (an optimizer step);
- ``buffers``, ``training``: every buffer (BatchNorm's running statistics) and every module's
  ``training`` flag of the modules the call reaches, after the call;
- ``inputs``: the tensor arguments after the call (in-place changes).

Where the rewrite draws randomness differently, both calls run with every ``nn.Dropout`` at
``p=0`` (``dropout_off``). What cannot be compared goes to ``unchecked`` with the reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from torchscope.protocol import CHANGES_AUTOGRAD, CHANGES_OUTPUTS, CHANGES_STATE
from torchscope.worker.outputs import differs, leaves, parameters_of, roots_of

COTANGENT_SEED = 1
DROPOUT_NOTE = "with dropout off (the two draw different masks)"
ALWAYS_UNCHECKED = (
    "other calls: only this call's inputs, shapes, dtypes and modes were run",
    "callers: what a caller does with the result beyond one backward pass",
)


@dataclass
class Side:
    """One side's call: what it returned, and the objects the call reached."""

    prepared: Any
    result: Any
    grad_enabled: bool


@dataclass
class Check:
    """The comparison so far; ``refusal`` is set by the first difference."""

    checks: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compared: int = 0
    refusal: Optional[str] = None
    detail: str = ""

    def differ(self, refusal: str, detail: str) -> None:
        if self.refusal is None:
            self.refusal, self.detail = refusal, detail

    def as_dict(self) -> dict[str, Any]:
        same = self.refusal is None or self.refusal != CHANGES_OUTPUTS
        return {
            "same": same,
            "compared": self.compared,
            "detail": self.detail,
            "refusal": self.refusal,
            "checks": self.checks,
            "unchecked": [*self.unchecked, *ALWAYS_UNCHECKED],
            "notes": self.notes,
        }


def modules_of(prepared: Any) -> list[tuple[str, Any]]:
    """Every ``nn.Module`` the call reaches directly (or in a list, tuple or dict), each once."""
    import torch

    found: dict[int, tuple[str, Any]] = {}
    for label, root in roots_of(prepared):
        if isinstance(root, dict):
            items = [(f"{label}[{k!r}]", v) for k, v in root.items()]
        elif isinstance(root, (list, tuple)):
            items = [(f"{label}[{i}]", v) for i, v in enumerate(root)]
        else:
            items = [(label, root)]
        for name, value in items:
            if isinstance(value, torch.nn.Module):
                found.setdefault(id(value), (name, value))
    return list(found.values())


@contextlib.contextmanager
def dropout_off(prepared: list[Any]) -> Iterator[None]:
    """Every ``nn.Dropout`` the calls reach at ``p=0`` (restored after)."""
    import torch

    saved: list[tuple[Any, float]] = []
    for one in prepared:
        for _, root in modules_of(one):
            for module in root.modules():
                if isinstance(module, torch.nn.modules.dropout._DropoutNd):
                    saved.append((module, module.p))
                    module.p = 0.0
    try:
        yield
    finally:
        for module, p in saved:
            module.p = p


def _tensors(value: Any) -> list[tuple[str, Any]]:
    import torch

    return [(p, v) for p, v in leaves(value, "result", set()) if isinstance(v, torch.Tensor)]


def _outputs(check: Check, a: Side, b: Side) -> None:
    check.checks.append("outputs")
    a_items = list(leaves(a.result, "result", set()))
    b_items = list(leaves(b.result, "result", set()))
    if [p for p, _ in a_items] != [p for p, _ in b_items]:
        check.differ(CHANGES_OUTPUTS, "the results have different structures")
        return
    import torch

    for (path, x), (_, y) in zip(a_items, b_items):
        check.compared += 1
        detail = differs(x, y)
        if not detail and isinstance(x, torch.Tensor) and x.device != y.device:
            detail = f"device {x.device} vs {y.device}"
        if detail:
            check.differ(CHANGES_OUTPUTS, f"{path}: {detail}")
            return


def _requires_grad(check: Check, a: Side, b: Side) -> list[int]:
    """Compares the flags; the positions of the original's outputs that require grad."""
    check.checks.append("requires_grad")
    needing = []
    for i, ((path, x), (_, y)) in enumerate(zip(_tensors(a.result), _tensors(b.result))):
        where = "" if path == "result" else f" ({path})"
        if x.requires_grad and not y.requires_grad:
            check.differ(
                CHANGES_AUTOGRAD,
                f"the original's output requires grad, the rewrite's does not{where}",
            )
        elif y.requires_grad and not x.requires_grad:
            check.differ(
                CHANGES_AUTOGRAD,
                f"the rewrite's output requires grad, the original's does not{where}",
            )
        if x.requires_grad:
            needing.append(i)
    return needing


def _named_parameters(prepared: Any) -> list[tuple[str, Any]]:
    """``parameters_of``'s tensors, named as their module names them (``c_attn.weight``)."""
    names: dict[int, str] = {}
    for _, module in modules_of(prepared):
        for name, p in module.named_parameters():
            names.setdefault(id(p), name)
    return [(names.get(id(p), f"parameter {i}"), p) for i, p in enumerate(parameters_of(prepared))]


def _grad_pairs(a: Side, b: Side) -> Iterator[tuple[str, Any, Any]]:
    import torch

    for (name, p), (_, q) in zip(_named_parameters(a.prepared), _named_parameters(b.prepared)):
        if p.grad is not None or q.grad is not None:
            zero_p = torch.zeros_like(p) if p.grad is None else p.grad
            zero_q = torch.zeros_like(q) if q.grad is None else q.grad
            yield f"the gradient {name} left", zero_p, zero_q


def _backward(side: Side, needing: list[int]) -> tuple[list[str], list[Any]]:
    """One backward pass from the outputs at ``needing`` with seeded cotangents: the names
    and gradients (None: unused) of the tensor inputs that require grad and the parameters."""
    import torch

    outputs = [t for i, (_, t) in enumerate(_tensors(side.result)) if i in needing]
    generator = torch.Generator().manual_seed(COTANGENT_SEED)
    cotangents = [
        torch.randn(t.shape, generator=generator, dtype=t.dtype).to(t.device) for t in outputs
    ]
    prepared = side.prepared
    inputs = [
        (f"input {path.replace('result', 'args', 1)}", t)
        for path, t in _tensors((prepared.args, prepared.kwargs))
        if t.requires_grad
    ]
    inputs += [(n, p) for n, p in _named_parameters(prepared) if p.requires_grad]
    unique: dict[int, tuple[str, Any]] = {}
    for name, t in inputs:
        unique.setdefault(id(t), (name, t))
    names = [n for n, _ in unique.values()]
    grads = torch.autograd.grad(
        outputs, [t for _, t in unique.values()], cotangents, allow_unused=True
    )
    return names, list(grads)


def _grads(check: Check, a: Side, b: Side, needing: list[int]) -> None:
    """``grads`` joins ``checks`` when a gradient was compared: one the call left, or one of
    the backward pass."""
    pairs = list(_grad_pairs(a, b))
    if pairs or (needing and check.refusal is None):
        check.checks.append("grads")
    for path, x, y in pairs:
        check.compared += 1
        detail = differs(x, y, summed=True)
        if detail:
            check.differ(CHANGES_AUTOGRAD, f"{path} differs: {detail}")
            return
    if not needing:
        if not pairs:
            check.unchecked.append("grads: no output requires grad and the call left none")
        return
    if check.refusal is not None:
        return
    try:
        names, before = _backward(a, needing)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0][:160]
        check.unchecked.append(f"backward through the result: it raised on the original ({first})")
        return
    try:
        _, after = _backward(b, needing)
    except RuntimeError as exc:
        check.differ(CHANGES_AUTOGRAD, f"a backward pass through the rewrite raised: {exc}")
        return
    for name, x, y in zip(names, before, after):
        check.compared += 1
        if x is None and y is None:
            continue
        if (x is None) != (y is None):
            used = "the original's" if x is not None else "the rewrite's"
            check.differ(CHANGES_AUTOGRAD, f"only {used} output has a gradient for {name}")
            return
        detail = differs(x, y, summed=True)
        if detail:
            check.differ(CHANGES_AUTOGRAD, f"the gradient of {name} differs: {detail}")
            return


def _state(check: Check, a: Side, b: Side) -> None:
    import torch

    pairs: list[tuple[str, str, Any, Any]] = []
    for (name, p), (_, q) in zip(_named_parameters(a.prepared), _named_parameters(b.prepared)):
        pairs.append(("parameters", f"parameter {name}", p, q))
    a_mods, b_mods = modules_of(a.prepared), modules_of(b.prepared)
    for (label, m), (_, n) in zip(a_mods, b_mods):
        if [k for k, _ in m.named_buffers()] != [k for k, _ in n.named_buffers()]:
            check.differ(CHANGES_STATE, f"{label} holds other buffers after the call")
        for (name, x), (_, y) in zip(m.named_buffers(), n.named_buffers()):
            pairs.append(("buffers", f"buffer {name}", x, y))
        for (name, x), (_, y) in zip(m.named_modules(), n.named_modules()):
            pairs.append(
                ("training", f"{name or type(m).__name__}.training", x.training, y.training)
            )
    a_in = _tensors((a.prepared.args, a.prepared.kwargs))
    b_in = _tensors((b.prepared.args, b.prepared.kwargs))
    for (path, x), (_, y) in zip(a_in, b_in):
        pairs.append(("inputs", f"input {path.replace('result', 'args', 1)}", x, y))
    for kind in ("parameters", "buffers", "training", "inputs"):
        if kind not in check.checks and any(k == kind for k, *_ in pairs):
            check.checks.append(kind)
    for _, what, x, y in pairs:
        check.compared += 1
        detail = differs(x, y)
        if detail:
            check.differ(CHANGES_STATE, f"{what} after the call: {detail}")
            return
    if any(isinstance(r, torch.optim.Optimizer) for _, r in roots_of(a.prepared)):
        check.unchecked.append("optimizer state (moments): not compared; the parameters are")


def compare_sides(a: Side, b: Side, dropout_was_off: bool) -> Check:
    """Everything the module docstring lists, original ``a`` against rewrite ``b``."""
    check = Check()
    if dropout_was_off:
        check.notes.append(DROPOUT_NOTE)
        check.unchecked.append("dropout masks: the rewrite draws them differently")
    _outputs(check, a, b)
    needing = _requires_grad(check, a, b)
    _grads(check, a, b, needing)
    _state(check, a, b)
    return check


def no_grad_evidence(side: Side) -> str:
    """ "" when the call is evidence that nothing differentiates through it (inference-mode's
    assumption): it ran without grad, or every module it reaches is in eval mode and no output
    requires grad; else why not."""
    if not side.grad_enabled:
        return ""
    if any(t.requires_grad for _, t in _tensors(side.result)):
        return "the original's output requires grad"
    training = [
        label for label, m in modules_of(side.prepared) if any(s.training for s in m.modules())
    ]
    if training:
        return (
            f"the call ran with grad on and a module in training mode ({training[0]}): a "
            "training step may differentiate through it"
        )
    return ""


def lower_triangular(prepared: Any, cls: str, expr: str) -> str:
    """ "" when ``expr`` (``self.bias``) of every instance of class ``cls`` the call reaches is
    lower-triangular (ones on and below the diagonal, zeros above), else why not."""
    import torch

    instances = [
        sub for _, m in modules_of(prepared) for sub in m.modules() if type(sub).__qualname__ == cls
    ]
    if not instances:
        return f"no {cls} reached by the call to read {expr} from"
    for instance in instances:
        try:
            value = eval(expr, {}, {"self": instance})  # the rewrite's own expression
        except Exception as exc:
            return f"{expr} raised {type(exc).__name__}: {exc}"
        if not isinstance(value, torch.Tensor) or value.dim() < 2:
            return f"{expr} is not a matrix"
        rows, cols = value.shape[-2], value.shape[-1]
        tril = torch.tril(torch.ones(rows, cols, dtype=torch.bool, device=value.device))
        if rows != cols or not bool(((value != 0) == tril).all()):
            return f"{expr} is not lower-triangular"
    return ""
