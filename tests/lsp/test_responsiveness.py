"""The server keeps answering the editor while a profile runs: a hover and inlay hints sent
during a slow job come back before the job ends (profiling runs in the worker process, and
the server awaits it without blocking its event loop)."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import FIXTURES
from tests.lsp.test_profile_command import MATMUL, SMALL, def_line, execute, profile_and_wait

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_hover_and_inlay_hints_answer_during_a_slow_profile(
    client: LanguageClient, tmp_path: Path
) -> None:
    fn_line = def_line(MATMUL, "fn")
    result, _ = await profile_and_wait(
        client, {"uri": MATMUL.as_uri(), "line": fn_line, "call": SMALL}
    )
    assert result["ok"]
    samples = tmp_path / "samples.py"
    shutil.copy(FIXTURES / "samples.py", samples)
    args = {"uri": samples.as_uri(), "line": def_line(samples, "slow"), "call": "slow(1)"}
    slow = asyncio.ensure_future(execute(client, args, token="tok-busy", msg_id="busy-1"))
    # Wait until the worker is inside the user's code (a 30 s sleep).
    while not any(
        isinstance(r, types.WorkDoneProgressReport) and "first call" in (r.message or "")
        for r in client.progress_reports.get("tok-busy", [])
    ):
        await asyncio.sleep(0.05)
    try:
        doc = types.TextDocumentIdentifier(uri=MATMUL.as_uri())
        start = time.perf_counter()
        hover = await asyncio.wait_for(
            client.text_document_hover_async(
                types.HoverParams(text_document=doc, position=types.Position(fn_line, 4))
            ),
            10,
        )
        hover_s = time.perf_counter() - start
        hints = await asyncio.wait_for(
            client.text_document_inlay_hint_async(
                types.InlayHintParams(
                    text_document=doc,
                    range=types.Range(types.Position(0, 0), types.Position(fn_line + 5, 0)),
                )
            ),
            10,
        )
        assert not slow.done(), "the slow profile ended before the hover came back"
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "fn" in hover.contents.value
        assert hints is not None
        print(f"hover during a running profile: {hover_s * 1000:.1f} ms")
    finally:
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="busy-1"))
        with pytest.raises(Exception, match="cancel"):
            await asyncio.wait_for(slow, 30)
