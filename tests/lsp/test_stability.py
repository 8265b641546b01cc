"""Issue 40 in the editor, over real LSP: an unstable verdict's line on the ``def``
diagnostic and in the hover, a call that never reaches the function as the CLI's one failure
message, and ``torchscope.profileInRun``'s ``mode`` on the team's nanoGPT-shaped train.py."""

from __future__ import annotations

import sys

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import FIXTURES
from tests.lsp.conftest import hover_text
from tests.lsp.test_profile_command import profile_and_wait
from tests.lsp.test_run_command import profile_in_run

pytestmark = pytest.mark.asyncio(loop_scope="module")

SAMPLES = FIXTURES / "stability_samples.py"
FAST = {"timing_budget_s": 0.3}
ADVICE = "; rerun, or raise --timing-budget"


async def test_an_unstable_verdict_says_why_on_the_def_line_and_in_the_hover(
    client: LanguageClient,
) -> None:
    uri = SAMPLES.as_uri()
    line = [i for i, t in enumerate(SAMPLES.read_text().splitlines()) if "def forward" in t][1]
    call = "ProfilerShy()(torch.randn(8, 16))"
    result, diagnostics = await profile_and_wait(
        client, {"uri": uri, "line": line, "call": call} | FAST
    )
    assert result["ok"], result
    reason = result["report"]["verdict"]["unstable_reason"]
    assert result["report"]["verdict"]["stable"] is False and reason.endswith(ADVICE)
    [verdict] = [d for d in diagnostics if d.source == "torchscope" and d.range.start.line == line]
    assert verdict.message.splitlines()[-1] == reason
    assert f"**{reason}**" in await hover_text(client, uri, line)


async def test_a_call_that_never_reaches_the_function_is_one_error(
    client: LanguageClient,
) -> None:
    model = FIXTURES / "nanogpt" / "model.py"
    uri = model.as_uri()
    line = next(i for i, t in enumerate(model.read_text().splitlines()) if "def forward" in t)
    shown = len(client.messages)
    result, _ = await profile_and_wait(
        client, {"uri": uri, "line": line, "call": "MLP(GPTConfig())(torch.randn(4, 32, 32))"}
    )
    said = "the call never called CausalSelfAttention.forward (it called MLP.forward)"
    assert not result["ok"] and said in result["error"], result
    errors = [m for m in client.messages[shown:] if m.type == types.MessageType.Error]
    assert len(errors) == 1 and said in errors[0].message


async def test_profile_in_run_takes_a_mode_and_says_what_the_calls_were(
    client: LanguageClient,
) -> None:
    # The fixture itself (no capture: nothing is written there). A copy elsewhere would not do
    # in this worker: the test above imported the fixture's model.py as `model`.
    folder = FIXTURES / "nanogpt"
    uri = (folder / "model.py").as_uri()
    entry = [sys.executable, str(folder / "train.py")]
    args = {"uri": uri, "qualname": "CausalSelfAttention.forward", "entry": entry, "calls": 2}
    bad, _ = await profile_in_run(client, args | {"mode": "fast"})
    assert not bad["ok"] and "'mode' must be one of any, train, eval" in bad["error"]
    shown = len(client.messages)
    result, _ = await profile_in_run(client, args | {"mode": "train", "cwd": str(folder)} | FAST)
    assert result["ok"], result
    run = result["report"]["run"]
    assert run["mode"] == "train" and [c["training"] for c in run["calls"]] == [True, True]
    infos = [m.message for m in client.messages[shown:] if m.type == types.MessageType.Info]
    assert f"torchscope: {run['mode_note']}" in infos, infos
