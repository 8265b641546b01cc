"""Optimizer steps: the multi-tensor (``_foreach_*``) and fused (``_fused_adam_``,
``_fused_adamw_``, ``_fused_sgd_``) kernels and the ``Optimizer.step`` annotation. Tensor lists
are recorded without their shapes, so no FLOP or byte model. A step run one tensor at a time
(``foreach=False``, the CPU default) is a chain of small elementwise ops inside the
``Optimizer.step#…`` annotation: ``in_step`` tells the advice so (``foreach=True`` /
``fused=True`` before ``torch.compile``)."""

from __future__ import annotations

STEP_ANNOTATION = "Optimizer.step#"
FUSED = ("aten::_fused_adam", "aten::_fused_sgd", "aten::_fused_adagrad")


def is_optimizer(name: str) -> bool:
    return "_foreach_" in name or name.startswith(FUSED) or name.startswith(STEP_ANNOTATION)


def in_step(annotations: list[str]) -> bool:
    """Whether an op under these enclosing annotation names runs inside an optimizer step."""
    return any(a.startswith(STEP_ANNOTATION) for a in annotations)
