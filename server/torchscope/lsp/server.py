"""The ``TorchscopeServer``: owns settings, the job service (one worker) and the results.

Handlers live in their own modules (``profile_command``, ``target_request``, ``documents``) and
take the server first; ``lsp/wiring.py`` registers them and runs stdio.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
from collections.abc import Generator
from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from torchscope._version import __version__
from torchscope.host.profile_run import Profiler
from torchscope.host.session import JobService
from torchscope.host.trace_analysis import TraceAnalyzer
from torchscope.ingest.text import lone_surrogate_at, surrogate_message
from torchscope.lsp.constants import SERVER_NAME
from torchscope.lsp.diagnostics import diagnostics_for
from torchscope.lsp.results import ResultStore
from torchscope.lsp.settings import Settings, SettingsError
from torchscope.source.targets import TargetError, read_source

log = logging.getLogger(__name__)

#: The params of the ``workspace/executeCommand`` being handled, for its ``workDoneToken``
#: (pygls passes command handlers only the ``arguments``).
EXECUTE_PARAMS: contextvars.ContextVar[Optional[types.ExecuteCommandParams]] = (
    contextvars.ContextVar("torchscope_execute_params", default=None)
)


@dataclasses.dataclass(frozen=True)
class _Refused:
    """A client message refused at the edge: its ``id`` (None: a notification), its method
    and where in its params the lone surrogate is."""

    id: Any
    method: str
    where: str


class TorchscopeProtocol(LanguageServerProtocol):
    """pygls' protocol plus two hooks: the executeCommand params and ``$/cancelRequest``."""

    _server: TorchscopeServer

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        EXECUTE_PARAMS.set(params)
        return (yield from super().lsp_workspace__execute_command(params))

    def structure_message(self, data: dict[str, Any]) -> Any:
        """A message with a lone surrogate in it is answered at the edge (:class:`_Refused`):
        no handler sees it, and no reply echoes it."""
        if "jsonrpc" in data and "method" in data:
            bad = lone_surrogate_at(data.get("params"), "params")
            if bad is not None:
                return _Refused(data.get("id"), str(data["method"]), bad)
        return super().structure_message(data)

    def handle_message(self, message: Any) -> None:
        if not isinstance(message, _Refused):
            return super().handle_message(message)  # type: ignore[no-any-return]
        text = f"torchscope: {message.method}: {surrogate_message(message.where)}"
        if message.id is None:  # a notification: nothing to answer, so the user is told
            self._server.show(types.MessageType.Error, text)
        else:
            self._send_response(
                message.id, None, types.ResponseError(JsonRpcInvalidParams.CODE, text)
            )

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        super()._handle_cancel_notification(msg_id)
        task = self._server.running.get(msg_id)
        if task is not None and not task.done():
            log.info("cancelling request %s: killing its worker job", msg_id)
            task.cancel()


class TorchscopeServer(LanguageServer):
    def __init__(self) -> None:
        # One thread reads stdin (no handler runs in pygls' pool): the default pool grows a
        # thread each time the next read is submitted before the last one's thread is idle.
        super().__init__(SERVER_NAME, __version__, protocol_cls=TorchscopeProtocol, max_workers=1)
        self.settings = Settings()
        self.results = ResultStore()
        self.running: dict[Any, asyncio.Task[Any]] = {}
        self.trace_findings: dict[str, list[types.Diagnostic]] = {}
        """Diagnostics from the last ``torchscope.analyzeTrace``, by document URI."""
        self._jobs: Optional[JobService] = None
        self._jobs_key: tuple[Any, ...] = ()
        self._closing: set[asyncio.Future[None]] = set()  # old workers shutting down
        self.closed_documents: set[str] = set()
        """URIs the editor closed (and has not reopened): results are kept, not published."""
        self.analyzer = TraceAnalyzer(lambda: self.settings.job.max_memory)
        """Runs ``torchscope.analyzeTrace`` in a child process (``host/trace_analysis.py``)."""

    def apply_settings(self, options: Any) -> None:
        try:
            self.settings = Settings.from_options(options)
        except SettingsError as exc:
            self.show(types.MessageType.Error, f"torchscope: {exc}; using the defaults")
            self.settings = Settings()

    @property
    def jobs(self) -> JobService:
        """The job service for the configured interpreter (recreated when settings change it);
        a job's options are the settings' (``Settings.job``) with the command's overrides."""
        settings = self.settings
        key = (
            settings.worker_python,
            settings.trace_dir,
            settings.keep_traces,
            settings.retention,
            tuple(sorted(settings.env.items())),
            settings.env_file,
        )
        if self._jobs is None or key != self._jobs_key:
            if self._jobs is not None:
                self._closing.add(asyncio.ensure_future(self._jobs.close()))
            self._jobs_key = key
            root = self.workspace_root()
            self._jobs = JobService(
                settings.worker_python,
                settings.trace_dir,
                settings.keep_traces,
                cwd=str(root) if root else None,
                on_worker_stderr=self.log_worker,
                analyzer=self.analyzer,  # one warm child for opened traces and profiles'
                retention=settings.retention,
                env=self._worker_env(root),
            )
        return self._jobs

    def _worker_env(self, root: Optional[Path]) -> dict[str, str]:
        """The settings' variables for the worker; a bad env file is said once and skipped."""
        try:
            return self.settings.worker_env(root)
        except SettingsError as exc:
            self.show(types.MessageType.Error, f"torchscope: {exc}; the worker starts without it")
            return dict(self.settings.env)

    @property
    def profiler(self) -> Profiler:
        """The job service's worker (its handshake, its lock)."""
        return self.jobs.profiler

    def prestart_worker(self) -> bool:
        """Start the worker (import torch, warm the CPU profiler: no GPU work, no calibration)
        in the background, so the first **Profile** answers in well under a second instead of
        paying that start-up; "worker ready" is logged once all of it is done. Not with
        ``prestart: "off"`` (the worker then starts at the first job): False."""
        if self.settings.prestart == "off":
            self.log("worker not prestarted (torchscope.prestart: off): it starts at the first job")
            return False
        profiler = self.profiler

        async def start() -> None:
            try:
                hello = await profiler.hello()
                await profiler.warm()
            except Exception as exc:  # reported again, with the fix, when a profile is asked for
                self.log(f"worker not started: {exc}", types.MessageType.Warning)
                return
            devices = ", ".join(hello.device_names) or "CPU only"
            versions = f"Python {hello.python_version}, torch {hello.torch_version}"
            self.log(f"worker ready: {versions}, {devices}")

        self._closing.add(asyncio.ensure_future(start()))
        return True

    def workspace_root(self) -> Optional[Path]:
        try:
            root = self.workspace.root_path
        except RuntimeError:  # before initialize
            return None
        return Path(root) if root else None

    def workspace_for(self, path: Path) -> str:
        """A job's workspace (``JobOptions.workspace_root``, where captures live): the root for
        a file under it, else the file's folder."""
        root = self.workspace_root()
        return str(root) if root and path.is_relative_to(root) else str(path.parent)

    def document_text(self, uri: str) -> str:
        """The editor's text of ``uri``, else the saved file's, read as checked
        (``targets.read_source``: a FIFO, a device or a huge file is refused, never waited
        on); ``TargetError`` says why not."""
        document = self.workspace.text_documents.get(uri)
        if document is not None:
            return str(document.source)
        return read_source(Path(to_fs_path(uri) or ""))

    def show(self, kind: types.MessageType, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def log_reader_note(self) -> None:
        """Once per session, in the editor's log: the native trace reader is missing here, and
        what that costs (nothing when it loaded)."""
        from torchscope.ingest import accel

        note = accel.reader_note()
        if note is not None:
            self.log(note, types.MessageType.Info)

    def log_worker(self, line: str) -> None:
        self.log(f"[worker] {line}")

    def document_lines(self, uri: str) -> list[str]:
        """The document's lines as the editor has them (unsaved edits included)."""
        try:
            return self.document_text(uri).splitlines()
        except (TargetError, OSError, UnicodeDecodeError):
            return []

    def publish(self, uri: str) -> None:
        lines = self.document_lines(uri)
        diagnostics = [
            d
            for result in self.results.functions(uri)
            for d in diagnostics_for(result, lines, self.settings.hot_share)
        ]
        diagnostics += self.trace_findings.get(uri, [])
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )

    def refresh_views(self) -> None:
        """Ask the client to re-request inlay hints and code lenses (when it supports that)."""
        workspace = self.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.protocol.send_request(types.WORKSPACE_INLAY_HINT_REFRESH, None)
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.protocol.send_request(types.WORKSPACE_CODE_LENS_REFRESH, None)

    async def close(self) -> None:
        for task in list(self.running.values()):
            task.cancel()
        await self.analyzer.close()
        if self._jobs is not None:
            await self._jobs.close()
