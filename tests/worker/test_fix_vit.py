"""``sdpa`` on a ViT's attention written with modules (issue 55): ``self.attend =
nn.Softmax(dim=-1)`` and ``self.dropout = nn.Dropout(p)`` between the two matmuls, as
vit-pytorch writes it (``tests/fixtures/workspace/families/vit.py``). The rewrite is tried for
real (outputs, requires_grad, gradients, buffers) and the rewritten file's AdamW training step
is held to the original's: the loss and every gradient equal with dropout off."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tests.conftest import FIXTURES
from tests.worker.test_fix import _cli
from torchscope.source.fixes import fix_by_id

VIT = FIXTURES / "families" / "vit.py"
MODULE_FORM = "dropout_p=(self.dropout.p if self.training else 0.0), scale=self.scale)"


def _rewritten(source: str) -> str | None:
    fix = fix_by_id("sdpa")
    assert fix is not None
    rewrite = fix.rewrite(source, "Attention.forward", "cpu")
    return None if rewrite is None else rewrite.source


def test_the_module_form_is_rewritten_with_the_modules_own_probability() -> None:
    source = _rewritten(VIT.read_text())
    assert source is not None
    assert f"F.scaled_dot_product_attention(q, k, v, {MODULE_FORM}" in source
    for gone in ("self.attend(dots)", "self.dropout(attn)", "torch.matmul(attn, v)"):
        assert gone not in source


@pytest.mark.parametrize(
    ("built", "why"),
    [
        ("self.attend = nn.Softmax(dim=1)", "a softmax over another dimension"),
        ("self.attend = nn.LogSoftmax(dim=-1)", "not a softmax"),
    ],
)
def test_a_module_that_is_not_a_last_dim_softmax_is_not_rewritten(built: str, why: str) -> None:
    source = VIT.read_text().replace("self.attend = nn.Softmax(dim=-1)", built)
    assert built in source
    assert _rewritten(source) is None, why


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _training_step(module: ModuleType) -> list[torch.Tensor]:
    """The loss and every gradient of one AdamW step, dropout off (SDPA draws its own mask)."""
    model, optimizer, patches, labels = module.training()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    loss = module.train_step(model, optimizer, patches, labels)
    return [loss.detach()] + [p.grad for p in model.parameters() if p.grad is not None]


def test_the_rewritten_training_step_has_the_same_loss_and_gradients(tmp_path: Path) -> None:
    rewritten = tmp_path / "vit_sdpa.py"
    source = _rewritten(VIT.read_text())
    assert source is not None
    rewritten.write_text(source)
    before = _training_step(_load(VIT, "_vit_before"))
    after = _training_step(_load(rewritten, "_vit_after"))
    assert len(before) == len(after) > 10
    for a, b in zip(before, after):
        assert torch.isfinite(a).all() and torch.allclose(a, b, rtol=1e-4, atol=1e-5)


def test_the_trial_checks_outputs_gradients_and_state(tmp_path: Path) -> None:
    """``torchscope fix --try sdpa``: the real trial in a worker, with the fix's checks."""
    copy = Path(shutil.copy(VIT, tmp_path / "vit.py"))
    done = _cli(f"{copy.name}::Attention.forward", "--try", "sdpa", "--json",
                "--timing-budget", "0.3", "--warmup", "1", cwd=tmp_path)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    data = json.loads(done.stdout)
    assert data["refused"] in (None, "not faster"), data
    assert {"outputs", "requires_grad", "grads", "parameters", "training"} <= set(data["checks"])
    assert "same outputs with dropout off (the two draw different masks)" in data["message"]
