"""Fixes that never break the program (issue 39), end to end: the real CLI, the real worker,
real torch, on models written the way users write them (``tests/fixtures/workspace/
fix_corpus.py``: a GPT with attention dropout and a causal buffer, an nn.LSTM language model
on (T, B) input, a CNN with BatchNorm in training mode, training steps with AdamW and
zero_grad).

For each function of the corpus, every fix ``--list`` offers is tried with ``--apply`` on a
copy. Every rewrite whose checks passed (applied, or refused only as "not faster") then goes to
a copy of its own, and the copy's training steps run against the original's in a fresh
process: the loss and every gradient finite and equal within tolerance. ``inference-mode`` is
refused everywhere the outputs require grad. A rewrite that keeps the forward values but breaks
the gradients is refused as ``changes autograd``; a causal buffer that is not lower-triangular
is measured with ``attn_mask``; SDPA on the GPT attention is faster, with the same outputs
(dropout off, said so) and gradients, as ``torch.utils.benchmark`` says in the same run.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.worker.test_fix import _cli, benchmark_rounds, on_one_worker
from torchscope.host.fix_run import measure_rewrite
from torchscope.host.profile_run import Profiler
from torchscope.protocol import CHANGES_AUTOGRAD, JobOptions
from torchscope.source.fixes import fix_by_id
from torchscope.source.fixes.base import Rewrite
from torchscope.source.fixes.trial import NOT_FASTER, FixTrial
from torchscope.source.targets import function_named, read_source

pytestmark = pytest.mark.slow

CORPUS = FIXTURES / "fix_corpus.py"
FUNCTIONS = (
    "CausalSelfAttention.forward",
    "MLP.forward",
    "Block.forward",
    "GPT.forward",
    "LSTMLanguageModel.forward",
    "ConvNet.forward",
    "train_step",
    "step",
)
QUICK = ("--timing-budget", "0.3", "--warmup", "1")
AUTOGRAD = "changes autograd: the original's output requires grad, the rewrite's does not"


_TRAINING = """
import importlib.util, json, math, sys
import torch
paths, dropout_off = json.loads(sys.argv[1])

def load(k, path):
    torch.manual_seed(0)  # the module-level model of the script-style step
    spec = importlib.util.spec_from_file_location(f"_corpus{k}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def quiet(model):
    if dropout_off:  # the rewrite draws its dropout differently: compare without it
        for m in model.modules():
            if isinstance(m, torch.nn.modules.dropout._DropoutNd):
                m.p = 0.0
            if isinstance(m, torch.nn.LSTM):
                m.dropout = 0.0
    return model

runs = []
for k, path in enumerate(paths):
    module, out = load(k, path), {}
    for name in ("gpt", "lstm", "cnn"):
        torch.manual_seed(1)
        model, optimizer, x, y = module.training_of(name)
        quiet(model)
        loss = module.train_step(model, optimizer, x, y)
        out[name] = [loss.item()] + [p.grad for p in model.parameters()]
    torch.manual_seed(2)
    quiet(module.net)
    loss = module.step(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,)))
    out["step"] = [loss] + [p.grad for p in module.net.parameters()]
    runs.append(out)
problems = []
for name, values in runs[0].items():
    for i, (a, b) in enumerate(zip(values, runs[1][name])):
        a, b = torch.as_tensor(a), torch.as_tensor(b)
        if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
            problems.append(f"{name}[{i}] not finite")
        elif not torch.allclose(a, b, rtol=1e-4, atol=1e-5):
            problems.append(f"{name}[{i}] max difference {(a - b).abs().max().item():.3g}")
print(json.dumps(problems))
"""


def _training_problems(original: Path, rewritten: Path, dropout_off: bool) -> list[str]:
    """What differs between the two files' training steps (losses and gradients)."""
    spec = json.dumps([[str(original), str(rewritten)], dropout_off])
    done = subprocess.run(
        [sys.executable, "-c", _TRAINING, spec], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    problems: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return problems


def test_no_fix_the_corpus_is_offered_breaks_its_training_step(tmp_path: Path) -> None:
    tried: list[tuple[str, dict[str, Any]]] = []
    for qualname in FUNCTIONS:
        listed = _cli(f"{CORPUS}::{qualname}", "--list", "--json", cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        for fix_id in dict.fromkeys(row["id"] for row in json.loads(listed.stdout)["fixes"]):
            work = tmp_path / f"{qualname}-{fix_id}"
            work.mkdir()
            copy = Path(shutil.copy(CORPUS, work / "fix_corpus.py"))
            done = _cli(f"{copy.name}::{qualname}", "--try", fix_id, "--apply", "--json",
                        *QUICK, cwd=work)  # fmt: skip
            assert done.returncode in (0, 1), done.stderr
            data = json.loads(done.stdout)
            assert data["applied"] == (data["refused"] is None), data
            assert data["assumes"], data  # every trial says what the fix assumes
            if data["refused"] != "raises":
                assert data["checks"][:2] == ["outputs", "requires_grad"], data
            tried.append((f"{qualname} {fix_id}", data))
            if data["refused"] not in (None, NOT_FASTER):
                assert copy.read_text() == CORPUS.read_text()  # a refused rewrite is not written
                continue
            if not data["applied"]:  # passed every check, only not faster here: apply it too
                fix = fix_by_id(fix_id)
                assert fix is not None
                rewrite = fix.rewrite(CORPUS.read_text(), qualname, "cpu")
                assert rewrite is not None
                copy.write_text(rewrite.source)
            assert copy.read_text() != CORPUS.read_text()
            problems = _training_problems(CORPUS, copy, dropout_off=fix_id == "sdpa")
            assert not problems, (qualname, fix_id, data["message"], problems)
    by = dict(tried)
    print("\n".join(f"{k}: {d['message']}" for k, d in tried))
    # Every forward of a module in training mode returns what a training step differentiates:
    # inference-mode is refused there, naming why.
    forwards = [k for k in by if k.endswith(".forward inference-mode")]
    assert len(forwards) == 6, list(by)
    for key in forwards:
        assert by[key]["refused"] == "changes autograd", by[key]
        assert AUTOGRAD in by[key]["message"], by[key]
    assert not any(d["applied"] for k, d in tried if "inference-mode" in k)
    attention = by["CausalSelfAttention.forward sdpa"]
    assert "same outputs with dropout off (the two draw different masks)" in attention["message"]
    assert {"grads", "buffers", "training"} <= set(attention["checks"]), attention
    assert by["train_step channels-last"]["refused"] == "raises"  # token ids are 2-D


def _trial(file: Path, trace_dir: Path, qualname: str, call: str, rewrite: Rewrite) -> FixTrial:
    target = function_named(read_source(file), str(file), qualname)
    options = JobOptions(warmup=1, timing_budget_s=0.3, workspace_root=str(file.parent))

    async def work(profiler: Profiler) -> FixTrial:
        trial, _ = await measure_rewrite(profiler, target, call, options, rewrite)
        return trial

    return on_one_worker(file, trace_dir, work)


def test_a_rewrite_that_keeps_the_values_but_breaks_the_gradients_is_refused(
    tmp_path: Path, trace_dir: Path
) -> None:
    file = Path(shutil.copy(CORPUS, tmp_path / "fix_corpus.py"))
    source = file.read_text()
    fix = fix_by_id("sdpa")
    assert fix is not None
    good = fix.rewrite(source, "CausalSelfAttention.forward", "cpu")
    assert good is not None
    # Forward values unchanged: v's values flow, its gradient does not (c_attn's is wrong).
    detached = good.source.replace("attention(q, k, v,", "attention(q, k, v.detach(),")
    # Forward values unchanged, the output no longer requires grad at all.
    no_grad = good.source.replace(
        "return self.resid_dropout(self.c_proj(y))",
        "return self.resid_dropout(self.c_proj(y)).detach()",
    )
    assert detached != good.source and no_grad.count(".detach()") == 1
    call = "CausalSelfAttention(GPTConfig()).forward(torch.randn(2, 32, 64))"
    wrong = _trial(file, trace_dir, "CausalSelfAttention.forward", call,
                   Rewrite("sdpa", detached, (50,), good.assumes, source, dropout_off=True))  # fmt: skip
    assert wrong.same_outputs and wrong.refused == CHANGES_AUTOGRAD, wrong.message
    assert "the gradient of c_attn.weight differs: max difference" in wrong.detail, wrong.detail
    assert "not offered: changes autograd: the gradient of c_attn.weight" in wrong.message
    flat = _trial(file, trace_dir, "CausalSelfAttention.forward", call,
                  Rewrite("sdpa", no_grad, (50,), good.assumes, source, dropout_off=True))  # fmt: skip
    assert flat.refused == CHANGES_AUTOGRAD and AUTOGRAD in flat.message, flat.message


def test_a_causal_buffer_that_is_not_lower_triangular_is_measured_with_attn_mask(
    tmp_path: Path, trace_dir: Path
) -> None:
    """The buffer a model registers need not be what its name says: one that lets the first
    token see every other is not causal, and ``is_causal=True`` would change the outputs."""
    file = tmp_path / "fix_corpus.py"
    prefix = "        self.bias[..., 0, :] = 1  # the first token sees them all: not causal\n"
    source = CORPUS.read_text().replace(
        "        )\n\n    # torchscope: CausalSelfAttention", f"        )\n{prefix}\n    # torchscope: CausalSelfAttention", 1
    )  # fmt: skip
    assert prefix in source
    file.write_text(source)
    fix = fix_by_id("sdpa")
    assert fix is not None
    rewrite = fix.rewrite(source, "CausalSelfAttention.forward", "cpu")
    assert rewrite is not None and rewrite.fallback is not None
    call = "CausalSelfAttention(GPTConfig()).forward(torch.randn(2, 32, 64))"
    trial = _trial(file, trace_dir, "CausalSelfAttention.forward", call, rewrite)
    assert trial.same_outputs and trial.refused in (None, NOT_FASTER), trial.message
    assert "attn_mask=self.bias[:, :, :T, :T] != 0" in trial.patch and "is_causal" not in trial.patch
    assert "measured with attn_mask: self.bias is not lower-triangular" in trial.message


def test_sdpa_on_gpt_attention_with_dropout_is_faster_with_the_same_outputs_and_grads(
    tmp_path: Path,
) -> None:
    file = Path(shutil.copy(CORPUS, tmp_path / "fix_corpus.py"))
    build = "CausalSelfAttention(GPTConfig(block_size=256, n_embd=128, n_head=4)).eval()"
    inputs = "torch.randn(8, 256, 128)"
    done = _cli(f"{file.name}::CausalSelfAttention.forward", "--try", "sdpa", "--json",
                "--call", f"{build}.forward({inputs})", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, (done.stderr, done.stdout)
    data = json.loads(done.stdout)
    assert data["verdict"] == "faster" and data["refused"] is None, data
    assert "same outputs with dropout off (the two draw different masks), same grads" in data[
        "message"
    ], data
    assert {"outputs", "requires_grad", "grads", "buffers"} <= set(data["checks"]), data
    assert any(u.startswith("dropout masks:") for u in data["unchecked"]), data
    fix = fix_by_id("sdpa")
    assert fix is not None
    rewrite = fix.rewrite(file.read_text(), "CausalSelfAttention.forward", "cpu")
    assert rewrite is not None
    rewritten = tmp_path / "rewritten.py"
    rewritten.write_text(rewrite.source)
    import torch

    # The block built once per side from the same seed, timed on the same input.
    rounds = benchmark_rounds([file, rewritten], "_block", f"_block({inputs})",
                              torch.get_num_threads(), function=build)  # fmt: skip
    expected = statistics.median(rounds)
    print(f"sdpa on GPT attention: torchscope {data['ratio']:.2f}× {data['interval']}, "
          f"torch.utils.benchmark {expected:.2f}× (rounds {rounds[0]:.2f}–{rounds[-1]:.2f})")  # fmt: skip
    assert expected > 1 and rounds[1] > 1
    assert abs(math.log(data["ratio"] / expected)) <= math.log(2.0), (data["ratio"], rounds)


def test_a_rewrite_that_keeps_the_values_but_not_the_batchnorm_statistics_is_refused(
    tmp_path: Path, trace_dir: Path
) -> None:
    """BatchNorm in training mode normalises by the batch's statistics and updates its running
    ones: a functional batch norm without the buffers returns the same values and gradients,
    and leaves the running statistics behind — the next eval() would see other numbers."""
    file = Path(shutil.copy(CORPUS, tmp_path / "fix_corpus.py"))
    source = file.read_text()
    stateless = source.replace(
        "x = F.relu(self.bn1(self.conv1(x)))",
        "x = F.relu(F.batch_norm(self.conv1(x), None, None, self.bn1.weight, self.bn1.bias, True))",
    )
    assert stateless != source
    call = "ConvNet().forward(torch.randn(8, 3, 16, 16))"
    trial = _trial(file, trace_dir, "ConvNet.forward", call,
                   Rewrite("inference-mode", stateless, (150,), "", source))  # fmt: skip
    assert trial.refused == "changes the state" and trial.same_outputs, trial.message
    assert "buffer bn1.running_mean after the call: max difference" in trial.detail, trial.detail
    assert {"outputs", "grads", "buffers"} <= set(trial.checks)
    assert "not offered: changes the state: buffer bn1.running_mean" in trial.message


def test_a_capture_from_a_training_loop_is_evidence_against_inference_mode(
    tmp_path: Path, trace_dir: Path
) -> None:
    """The trial's inputs can be a capture of a real call (``torchscope run --capture``): one
    taken in a training loop holds the module in training mode, and its output requires grad —
    the evidence that a training step differentiates through ``forward``."""
    directive = "    # torchscope: ConvNet().forward(torch.randn(8, 3, 16, 16))\n"
    source = CORPUS.read_text()
    assert directive in source
    (tmp_path / "fix_corpus.py").write_text(source.replace(directive, ""))  # the capture decides
    (tmp_path / "train.py").write_text(
        "import torch\nfrom fix_corpus import training_of, train_step\n\n"
        "model, optimizer, x, y = training_of('cnn')\n"
        "for _ in range(2):\n    train_step(model, optimizer, x, y)\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "torchscope", "run", "--target", "fix_corpus.py::ConvNet.forward",
         "--capture", "--calls", "1", "-q", "--trace-dir", str(trace_dir), "--steps", "1",
         *QUICK, "--", "python", "train.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    done = _cli("fix_corpus.py::ConvNet.forward", "--try", "inference-mode", "--json", *QUICK,
                cwd=tmp_path)  # fmt: skip
    data = json.loads(done.stdout)
    assert done.returncode == 1 and data["refused"] == "changes autograd", (done.stderr, data)
    assert AUTOGRAD in data["message"]
