"""Measured fixes, the source side (``source/fixes/``): what each rewrite matches, what it
writes, that the rest of the file stays byte-identical, where it is offered, and how a
finding says it has one. The measurement itself is ``tests/worker/test_fix.py``."""

from __future__ import annotations

from torchscope.analysis.multi.diff import DiffVerdict
from torchscope.analysis.results import Device, Finding, Report, Verdict
from torchscope.protocol import to_builtins
from torchscope.source.fixes import FIXES, ORDER, fix_by_id, offered
from torchscope.source.fixes.offers import attach_fixes
from torchscope.source.fixes.trial import CHANGES_OUTPUTS, NOT_FASTER, measured_trial

HEAD = "import math\nimport torch\nimport torch.nn.functional as F\n\nX = 1  # kept as is\n\n\n"


def _rewrite(fix_id: str, body: str, function: str = "f", device: str = "cpu") -> str | None:
    fix = fix_by_id(fix_id)
    assert fix is not None
    rewrite = fix.rewrite(HEAD + body, function, device)
    if rewrite is None:
        return None
    assert rewrite.source.startswith(HEAD)  # the rest of the file is byte-identical
    return rewrite.source[len(HEAD) :]


def test_fix_ids_follow_the_contract_order() -> None:
    ids = [f.id for f in FIXES]
    assert ids == [i for i in ORDER if i in ids]
    built = {"sdpa", "sync-in-loop", "foreach", "inference-mode", "zero-grad-none", "out-variant"}
    assert built | {"fused-optimizer"} <= set(ids)


def test_sdpa_folds_a_chain_of_assignments() -> None:
    body = (
        "def f(q, k, v):\n"
        "    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # scores\n"
        "    w = torch.softmax(s, dim=-1)\n"
        "    return w @ v\n"
    )
    assert _rewrite("sdpa", body) == (
        "def f(q, k, v):\n"
        "    return F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(q.size(-1)))\n"
    )


def test_sdpa_causal_and_masks() -> None:
    causal = (
        "def f(q, k, v):\n"
        "    n = q.size(-2)\n"
        "    m = torch.tril(torch.ones(n, n)) == 0\n"
        "    s = torch.matmul(q, k.mT) * 0.125\n"
        "    s = s.masked_fill(m, float('-inf'))\n"
        "    return s.softmax(-1) @ v\n"
    )
    out = _rewrite("sdpa", causal)
    assert out is not None
    assert "F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.125)" in out
    assert "masked_fill" not in out and "tril" not in out
    boolean = "def f(q, k, v, m):\n    return (q @ k.transpose(-1, -2)).masked_fill(m, -math.inf).softmax(dim=-1) @ v\n"
    assert "attn_mask=~m, scale=1.0" in (_rewrite("sdpa", boolean) or "")
    additive = "def f(q, k, v, m):\n    return F.softmax(q @ k.mT / 8 + m, dim=-1) @ v\n"
    assert "attn_mask=m, scale=1 / 8)" in (_rewrite("sdpa", additive) or "")


def test_sdpa_leaves_what_it_cannot_prove_alone() -> None:
    other_dim = "def f(q, k, v):\n    return torch.softmax(q @ k.transpose(-2, -1), dim=1) @ v\n"
    dropout = (
        "def f(q, k, v):\n    w = torch.softmax(q @ k.mT, dim=-1)\n"
        "    return F.dropout(w, 0.1) @ v\n"
    )
    read_twice = "def f(q, k, v):\n    w = torch.softmax(q @ k.mT, dim=-1)\n    return w @ v, w\n"
    no_transpose = "def f(q, k, v):\n    return torch.softmax(q @ k, dim=-1) @ v\n"
    for body in (other_dim, dropout, read_twice, no_transpose):
        assert _rewrite("sdpa", body) is None, body


def test_zero_grad_only_an_explicit_false() -> None:
    body = "def f(m, o):\n    m.zero_grad(set_to_none=False)\n    o.zero_grad()\n"
    assert _rewrite("zero-grad-none", body) == (
        "def f(m, o):\n    m.zero_grad(set_to_none=True)\n    o.zero_grad()\n"
    )
    assert _rewrite("zero-grad-none", "def f(o):\n    o.zero_grad()\n") is None


def test_fused_optimizer_by_device() -> None:
    body = "def f(p):\n    return torch.optim.AdamW(p, lr=1e-3)\n"
    assert "AdamW(p, lr=1e-3, foreach=True)" in (_rewrite("fused-optimizer", body) or "")
    cuda = _rewrite("fused-optimizer", body, device="cuda")
    assert "AdamW(p, lr=1e-3, fused=True)" in (cuda or "")
    given = "def f(p):\n    return torch.optim.AdamW(p, foreach=False)\n"
    assert _rewrite("fused-optimizer", given) is None


def test_inference_mode_only_without_autograd() -> None:
    body = "class M:\n    def forward(self, x):\n        return x\n"
    assert _rewrite("inference-mode", body, "M.forward") == (
        "class M:\n    @torch.inference_mode()\n    def forward(self, x):\n        return x\n"
    )
    training = "def f(model, x):\n    model(x).sum().backward()\n"
    assert _rewrite("inference-mode", training) is None
    already = "@torch.no_grad()\ndef f(model, x):\n    return model(x)\n"
    assert _rewrite("inference-mode", already) is None


def _report(*findings: Finding) -> Report:
    return Report(
        device=Device("cpu", "CPU"),
        # held to a peak: every encoded report goes through the self-check (issue 55)
        verdict=Verdict("compute-bound", "", 1.0, 0.0, efficiency=0.5),
        timing=None,
        profiler_overhead_us=None,
        findings=list(findings),
        top_ops=[],
        steps=[],
    )


def test_a_finding_that_has_a_fix_says_so_and_others_are_unchanged() -> None:
    source = HEAD + "def f(m):\n    m.zero_grad(set_to_none=False)\n"
    zero = Finding("zero-grad", "info", "zeroing", 10.0, line=9)
    elsewhere = Finding("zero-grad", "info", "zeroing", 10.0, line=2)
    other = Finding("sync", "warning", "sync", 5.0)
    report = attach_fixes(_report(zero, elsewhere, other), source, "f", "cpu")
    data = to_builtins(report)["findings"]
    assert data[0]["fix"] == {
        "rule": "zero-grad-none",
        "title": "zero_grad(set_to_none=True)",
        "measured": None,
    }
    assert "fix" not in data[1] and "fix" not in data[2]  # outside f; no fix for the rule


def test_a_tried_fix_says_what_it_measured_in_the_json_and_the_diagnostic() -> None:
    from lsprotocol import types

    from torchscope.lsp.diagnostics import finding_diagnostic
    from torchscope.source.fixes.offers import with_measured

    source = HEAD + "def f(m):\n    m.zero_grad(set_to_none=False)\n"
    zero = Finding("zero-grad", "info", "zeroing", 10.0, line=9)
    report = attach_fixes(_report(zero), source, "f", "cpu")
    where = types.Range(types.Position(8, 0), types.Position(8, 1))
    untried = finding_diagnostic(report.findings[0], where)
    assert untried.message == "zeroing · fix: zero_grad(set_to_none=True) (Try fix to measure)"
    trial = measured_trial("zero-grad-none", _verdict("faster", 0.4, 0.35, 0.5), {"same": True}, "")
    tried = with_measured(report, "zero-grad-none", trial.measured())
    assert report.findings[0].fix is not None and report.findings[0].fix.measured is None
    measured = to_builtins(tried)["findings"][0]["fix"]["measured"]
    assert measured["verdict"] == "faster" and measured["same_outputs"] is True
    message = finding_diagnostic(tried.findings[0], where).message
    assert message == f"zeroing · fix zero-grad-none: {trial.message}"
    assert trial.message.startswith("measured 2.5× faster")


def test_offered_lists_each_place() -> None:
    source = HEAD + "def f(m, o):\n    m.zero_grad(set_to_none=False)\n    o.zero_grad(False)\n"
    assert [(f.id, s.line) for f, s in offered(source, "f", "cpu")] == [
        ("zero-grad-none", 9),
        ("zero-grad-none", 10),
    ]
    assert offered(source, "missing", "cpu") == []


def _verdict(vid: str, ratio: float, low: float, high: float) -> DiffVerdict:
    return DiffVerdict(vid, "", ratio, low, high, 0.05, 0.01, 20)


def test_trial_messages_say_which_refusal() -> None:
    same = {"same": True, "compared": 1, "detail": ""}
    faster = measured_trial("sdpa", _verdict("faster", 0.5, 0.4, 0.6), same, "patch")
    assert faster.offered and faster.ratio == 2.0
    assert faster.message == "measured 2.0× faster (1.7×–2.5× faster), same outputs"
    differ = {"same": False, "compared": 1, "detail": "result: max difference 3"}
    changed = measured_trial("sdpa", _verdict("faster", 0.5, 0.4, 0.6), differ, "patch")
    assert changed.refused == CHANGES_OUTPUTS and changed.message.endswith(
        "— not offered: it changes the outputs"
    )
    flat = measured_trial("sdpa", _verdict("no-difference", 1.0, 0.95, 1.05), same, "patch")
    assert flat.refused == NOT_FASTER and flat.message.endswith("— not offered: not faster")
    # issue 54: a comparison that decided no direction is worded with none, however its
    # interval leans (the CPU run once read "no difference: 1.03× faster (1.01×–1.05× faster)")
    leaning = measured_trial("sdpa", _verdict("no-difference", 0.97, 0.95, 0.99), same, "p")
    assert leaning.message.startswith("measured no difference: 0.97× the time (0.95×–0.99×)")
    unsure = measured_trial("sdpa", _verdict("inconclusive", 0.94, 0.93, 0.96), same, "p")
    assert unsure.message.startswith("measured inconclusive: 0.94× the time (0.93×–0.96×)")
    assert unsure.message.endswith("— not offered: not shown faster (inconclusive)")
    assert "× faster" not in unsure.message


def test_sync_in_loop_is_offered_on_cuda_only_and_means_the_same() -> None:
    body = (
        "def f(xs):\n"
        "    out = []\n"
        "    for x in xs:\n"
        "        out.append((x * 2).sum().item())\n"
        "    return out\n"
    )
    assert _rewrite("sync-in-loop", body) is None  # the CPU has no queue to wait for
    out = _rewrite("sync-in-loop", body, device="cuda")
    assert out == (
        "def f(xs):\n"
        "    out = []\n"
        "    for x in xs:\n"
        "        out.append((x * 2).sum())\n"
        "    out = torch.stack(out).flatten().tolist() if out else []\n"
        "    return out\n"
    )
    import torch

    before: dict[str, object] = {}
    after: dict[str, object] = {}
    exec(HEAD + body, before)
    exec(HEAD + out, after)
    xs = [torch.arange(3.0) + i for i in range(4)]
    assert before["f"](xs) == after["f"](xs)  # type: ignore[operator]
    assert after["f"]([]) == []  # type: ignore[operator]
    read_inside = body.replace("        out.append", "        print(len(out))\n        out.append")
    early = body.replace(
        "        out.append", "        if x is None:\n            return out\n        out.append"
    )
    for other in (read_inside, early, body.replace("out = []", "out = [0.0]")):
        assert _rewrite("sync-in-loop", other, device="cuda") is None, other


def test_foreach_turns_a_loop_of_in_place_ops_into_one_call_per_op() -> None:
    body = (
        "def f(ps, gs, lr):\n"
        "    for p, g in zip(ps, gs):\n"
        "        p.mul_(0.9)\n"
        "        p.add_(g, alpha=-lr)\n"
        "    return ps\n"
    )
    assert _rewrite("foreach", body) == (
        "def f(ps, gs, lr):\n"
        "    torch._foreach_mul_(ps, 0.9)\n"
        "    torch._foreach_add_(ps, gs, alpha=-lr)\n"
        "    return ps\n"
    )
    reads_itself = "def f(ps):\n    for p in ps:\n        p.add_(p)\n"
    not_in_place = "def f(ps):\n    for p in ps:\n        p.add(1)\n"
    generator = "def f(m):\n    for p in m.parameters():\n        p.mul_(2)\n"
    for other in (reads_itself, not_in_place, generator):
        assert _rewrite("foreach", other) is None, other


def test_out_variant_updates_a_private_buffer_in_place() -> None:
    body = (
        "def f(xs, b):\n"
        "    acc = torch.zeros_like(xs[0])\n"
        "    for x in xs:\n"
        "        acc = acc + x  # sum\n"
        "        acc = acc - (x * b)\n"
        "    return acc / acc.sum()\n"
    )
    assert _rewrite("out-variant", body) == (
        "def f(xs, b):\n"
        "    acc = torch.zeros_like(xs[0])\n"
        "    for x in xs:\n"
        "        acc += x  # sum\n"
        "        acc -= x * b\n"
        "    return acc / acc.sum()\n"
    )
    lines = [site.line for site in fix_by_id("out-variant").sites(HEAD + body, "f", "cpu")]  # type: ignore[union-attr]
    assert lines == [11, 12]


def test_out_variant_leaves_a_buffer_anything_else_can_see() -> None:
    loop = "    for x in xs:\n        acc = acc + x\n"
    fresh = "def f(xs):\n    acc = torch.zeros(4)\n"
    not_offered = {
        "the caller's tensor": "def f(acc, xs):\n" + loop + "    return acc\n",
        "not made by an allocator": "def f(xs):\n    acc = xs[0]\n" + loop,
        "appended": fresh + "    out = []\n" + loop + "        out.append(acc)\n",
        "a view": fresh + "    v = torch.narrow(acc, 0, 0, 1)\n" + loop + "    return v\n",
        "a second name": fresh + "    keep = acc\n" + loop,
        "a closure": fresh + "    get = lambda: acc\n" + loop + "    return get\n",
        "yielded": fresh + loop + "        yield acc\n",
        "read on the right": fresh + "    for x in xs:\n        acc = acc + acc * x\n",
        "not the left operand": fresh + "    for x in xs:\n        acc = acc - x - 1\n",
        "outside a loop": fresh + "    acc = acc + xs[0]\n",
    }
    for why, body in not_offered.items():
        assert _rewrite("out-variant", body) is None, why
