"""Just enough of an LSP client to start a job on ``torchscope serve`` and then kill it:
pytest-lsp owns its server process, so killing that one mid-test is not possible there."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import TracebackType
from typing import Any, Optional

from tests.reliability.cases import def_line


class RawServer:
    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self._process = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.pid = self._process.pid
        self._next_id = 1
        self._send("initialize", {"processId": None, "rootUri": cwd.as_uri(), "capabilities": {}})
        self._send("initialized", {}, notification=True)

    def _send(self, method: str, params: Any, notification: bool = False) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notification:
            message["id"] = self._next_id
            self._next_id += 1
        body = json.dumps(message).encode()
        assert self._process.stdin is not None
        self._process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self._process.stdin.flush()

    def profile(self, path: Path, name: str) -> None:
        args = {"uri": path.as_uri(), "line": def_line(path, name) + 1, "timeout_s": 300}
        self._send(
            "workspace/executeCommand", {"command": "torchscope.profile", "arguments": [args]}
        )

    def shutdown(self, timeout_s: float = 30) -> int:
        """``shutdown`` then ``exit``, as an editor closing does; the server's exit status."""
        self._send("shutdown", None)
        self._send("exit", None, notification=True)
        return self._process.wait(timeout_s)

    def __enter__(self) -> RawServer:
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait(30)
