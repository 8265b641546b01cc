"""Issue 39, the source and report side: ``sdpa`` on the canonical GPT attention (dropout on the
weights, a causal buffer in both spellings) with what its trial must check, the assumption of
every fix on ``--list``, a trial's checks and refusals in words, and ``fix --list`` reading the
source only (no torch, no worker). The worker side is tests/worker/test_fix_corpus.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES
from torchscope.analysis.multi.diff import DiffVerdict
from torchscope.protocol import CHANGES_AUTOGRAD, NO_EVIDENCE, to_builtins
from torchscope.source.fixes import fix_by_id, offered_anywhere
from torchscope.source.fixes.trial import NOT_FASTER, measured_trial

CORPUS = FIXTURES / "fix_corpus.py"
ATTENTION = "CausalSelfAttention.forward"
MASK_LINE = '        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))\n'


def _sdpa(source: str):  # type: ignore[no-untyped-def]
    fix = fix_by_id("sdpa")
    assert fix is not None
    return fix.rewrite(source, ATTENTION, "cpu")


def test_sdpa_folds_attention_dropout_and_the_causal_buffer() -> None:
    source = CORPUS.read_text()
    rewrite = _sdpa(source)
    assert rewrite is not None
    call = (
        "y = F.scaled_dot_product_attention(q, k, v, "
        "dropout_p=(self.attn_dropout.p if self.training else 0.0), is_causal=True, "
        "scale=1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)"
    )
    assert call in rewrite.source
    for gone in ("att = self.attn_dropout(att)", "masked_fill", "att = F.softmax(att"):
        assert gone not in rewrite.source.split("def forward(self, x):")[1].split("class MLP")[0]
    # The buffer's shape is only known at run time: the trial checks it, with a fallback.
    assert rewrite.conditions == (
        {"kind": "lower-triangular", "class": "CausalSelfAttention", "expr": "self.bias",
         "instead": "attn_mask"},
    )
    assert rewrite.dropout_off  # SDPA draws its own dropout mask: compare with dropout off
    assert rewrite.fallback is not None and "is_causal" not in rewrite.fallback.source
    assert "attn_mask=self.bias[:, :, :T, :T] != 0, dropout_p=(" in rewrite.fallback.source


def test_sdpa_reads_the_inverted_mask_spelling_and_leaves_a_functional_dropout() -> None:
    source = CORPUS.read_text()
    inverted = source.replace(
        MASK_LINE, '        att = att.masked_fill(~self.mask[:T, :T], float("-inf"))\n'
    )
    rewrite = _sdpa(inverted)
    assert rewrite is not None and "is_causal=True" in rewrite.source
    assert rewrite.conditions[0]["expr"] == "self.mask"
    assert rewrite.fallback is not None and "attn_mask=self.mask[:T, :T], " in rewrite.fallback.source
    functional = source.replace("att = self.attn_dropout(att)", "att = F.dropout(att, 0.1)")
    assert _sdpa(functional) is None  # a literal p, and F.dropout's own training flag
    no_dropout = source.replace("        att = self.attn_dropout(att)\n", "")
    plain = _sdpa(no_dropout)
    assert plain is not None and not plain.dropout_off and "dropout_p" not in plain.source


def test_fused_optimizer_leaves_a_module_optimizer_a_parameter_shadows() -> None:
    source = CORPUS.read_text()
    # train_step(model, optimizer, ...) reads its parameter, not the module-level optimizer.
    ids = {f.id for f, _, _ in offered_anywhere(source, "train_step")}
    assert "fused-optimizer" not in ids
    step = [(f.id, s.line) for f, s, _ in offered_anywhere(source, "step", ("cpu",))]
    assert ("fused-optimizer", source.splitlines().index(
        "optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)"
    ) + 1) in step


def _verdict(vid: str, ratio: float, low: float, high: float) -> DiffVerdict:
    return DiffVerdict(vid, "", ratio, low, high, 0.05, 0.01, 20)


def test_a_trial_says_what_it_checked_and_names_the_refusal() -> None:
    checks = ["outputs", "requires_grad", "grads", "parameters", "buffers"]
    held = {"same": True, "refusal": None, "checks": checks, "unchecked": ["x: y"],
            "notes": ["with dropout off (the two draw different masks)"]}  # fmt: skip
    trial = measured_trial("sdpa", _verdict("faster", 0.5, 0.4, 0.6), held, "patch", "it holds")
    assert trial.offered and trial.message == (
        "measured 2.0× faster (1.7×–2.5× faster), same outputs with dropout off "
        "(the two draw different masks), same grads and buffers"
    )
    assert trial.summary == f"{trial.message} · checked: {', '.join(checks)} · assumes: it holds"
    data = to_builtins(trial)
    assert data["checks"] == checks and data["unchecked"] == ["x: y"]
    assert data["assumes"] == "it holds"

    why = "the original's output requires grad, the rewrite's does not"
    autograd = {"same": True, "refusal": CHANGES_AUTOGRAD, "detail": why, "checks": checks}
    refused = measured_trial("inference-mode", _verdict("faster", 0.5, 0.4, 0.6), autograd, "p")
    assert refused.refused == CHANGES_AUTOGRAD and refused.same_outputs
    assert refused.message.endswith(f"same outputs — not offered: changes autograd: {why}")
    evidence = {"same": True, "refusal": NO_EVIDENCE, "detail": "a module in training mode"}
    slow = measured_trial("inference-mode", _verdict("slower", 2.0, 1.8, 2.2), evidence, "p")
    assert slow.refused == NO_EVIDENCE  # a check's refusal wins over the timing's
    flat = measured_trial("sdpa", _verdict("no-difference", 1.0, 0.9, 1.1), held, "p")
    assert flat.refused == NOT_FASTER and ", same grads and buffers — not offered" in flat.message


def test_fix_list_reads_the_source_only(tmp_path: Path) -> None:
    """No torch import, no worker: ``--list`` answers from the text (bench/fix_list.py times
    it). Run in a fresh interpreter that records the modules it imported."""
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['torchscope', 'fix', sys.argv[1], '--list', '--json', '--python', "
        "'/bin/false']\n"  # a worker started with this interpreter would fail the command
        "try:\n    runpy.run_module('torchscope', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))\n"
    ).replace("import sys, runpy", "import json, sys, runpy")
    done = subprocess.run(
        [sys.executable, "-c", probe, f"{CORPUS}::{ATTENTION}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    listed, imported = done.stdout.strip().splitlines()
    rows = json.loads(listed)["fixes"]
    assert [r["id"] for r in rows] == ["sdpa", "inference-mode"]
    inference = next(r for r in rows if r["id"] == "inference-mode")
    assert "nothing differentiates through the function" in inference["assumes"]
    assert inference["devices"] == ["cpu", "cuda"]  # which one runs is the trial's question
    assert json.loads(imported) == []  # torch was never imported
    assert done.stderr == ""  # and no worker was asked anything (its python is /bin/false)


def test_a_profile_never_suggests_inference_mode() -> None:
    """A profile cannot tell whether a caller differentiates through the function: the
    finding does not point at inference-mode (``--try`` checks it on a call)."""
    from tests.unit.test_fixes import _report
    from torchscope.analysis.results import Finding
    from torchscope.source.fixes.offers import attach_fixes

    source = CORPUS.read_text()
    gap = Finding("dispatch-gap", "warning", "gaps", 10.0)
    report = attach_fixes(_report(gap), source, "GPT.forward", "cpu")
    assert report.findings[0].fix is None
    hot = Finding("hot-op", "warning", "hot", 10.0)
    attention = attach_fixes(_report(hot), source, ATTENTION, "cpu")
    assert attention.findings[0].fix is not None and attention.findings[0].fix.rule == "sdpa"
