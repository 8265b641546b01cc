"""``$/progress`` for one job: the client's token if it sent one, else one we create.

Cancelling the progress (the **Cancel** button) cancels the job, like ``$/cancelRequest``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer


class JobProgress:
    def __init__(self, server: LanguageServer, token: Optional[types.ProgressToken]) -> None:
        self._server = server
        self._token = token
        self._active = False

    @property
    def token(self) -> Optional[types.ProgressToken]:
        return self._token

    async def begin(self, title: str, task: asyncio.Task[Any]) -> None:
        progress = self._server.work_done_progress
        if self._token is None:
            capabilities = self._server.client_capabilities.window
            if not (capabilities and capabilities.work_done_progress):
                return
            token = f"torchscope-{uuid.uuid4()}"
            try:
                await progress.create_async(token)
            except Exception:
                return  # the client refused: profile without a progress bar
            self._token = token
        progress.begin(
            self._token,
            types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0),
        )
        self._active = True
        cancel_future = progress.tokens.get(self._token)
        if cancel_future is not None:
            cancel_future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)

    def report(self, message: str, fraction: float) -> None:
        if self._active and self._token is not None:
            self._server.work_done_progress.report(
                self._token,
                types.WorkDoneProgressReport(message=message, percentage=int(fraction * 100)),
            )

    def end(self, message: str) -> None:
        if self._active and self._token is not None:
            self._server.work_done_progress.end(
                self._token, types.WorkDoneProgressEnd(message=message)
            )
            self._server.work_done_progress.tokens.pop(self._token, None)
            self._active = False
