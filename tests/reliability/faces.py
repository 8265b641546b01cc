"""Raw clients of the two servers, for input no well-behaved client library would send (a lone
surrogate, spelled ``\\ud800`` in the JSON): ``torchscope serve`` over LSP's framing and
``torchscope mcp`` over JSON lines, each a real process read and written here. Each call
returns the reply (or raises on a server that stopped answering), and the messages the server
showed meanwhile."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Optional

from tests.reliability.conftest import ENV, TORCHSCOPE


class _Process:
    def __init__(self, command: list[str], cwd: Path, env: Optional[dict[str, str]]) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env or ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._buffer = b""
        self._next_id = 1

    def _read_some(self, deadline: float) -> None:
        assert self.process.stdout is not None
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the server did not answer in time")
        ready, _, _ = select.select([self.process.stdout], [], [], left)
        if ready:
            data = os.read(self.process.stdout.fileno(), 1 << 16)
            if not data:
                raise EOFError(f"the server ended (exit {self.process.wait(10)})")
            self._buffer += data

    def _write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def close(self) -> tuple[int, str]:
        """Stdin closed; the exit status and everything the server wrote on stderr."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            code = self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(30)
        assert self.process.stderr is not None
        return code, self.process.stderr.read().decode("utf-8", "replace")

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(30)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class RawLsp(_Process):
    """``torchscope serve``, initialized for ``root`` with traces in ``trace_dir``."""

    def __init__(self, root: Path, trace_dir: Path, env: Optional[dict[str, str]] = None) -> None:
        super().__init__([*TORCHSCOPE, "serve"], root, env)
        self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {},
                "initializationOptions": {"settings": {"trace_dir": str(trace_dir)}},
            },
        )
        self.notify("initialized", {})

    def __enter__(self) -> RawLsp:
        return self

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()  # \ud800 stays an escape
        self._write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def _message(self, deadline: float) -> dict[str, Any]:
        while True:
            head, sep, rest = self._buffer.partition(b"\r\n\r\n")
            if sep:
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                if len(rest) >= length:
                    self._buffer = rest[length:]
                    message: dict[str, Any] = json.loads(rest[:length])
                    return message
            self._read_some(deadline)

    def request(
        self, method: str, params: Any, timeout_s: float = 120
    ) -> tuple[dict[str, Any], list[str]]:
        """The response (``result`` or ``error``) and the messages shown before it came."""
        ident = self._next_id
        self._next_id += 1
        self._send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout_s
        shown: list[str] = []
        while True:
            message = self._message(deadline)
            if message.get("method") == "window/showMessage":
                shown.append(message["params"]["message"])
            elif "id" in message and "method" in message:  # a request to the client
                self._send({"id": message["id"], "result": None})
            elif message.get("id") == ident:
                return message, shown

    def command(self, name: str, arguments: dict[str, Any], timeout_s: float = 120) -> Any:
        return self.request(
            "workspace/executeCommand", {"command": name, "arguments": [arguments]}, timeout_s
        )

    def shutdown(self) -> tuple[int, str]:
        """``shutdown`` then ``exit``, as an editor closing does: exit status and stderr."""
        self.request("shutdown", None, 60)
        self.notify("exit", None)
        try:
            code = self.process.wait(60)
        finally:
            assert self.process.stderr is not None
            err = self.process.stderr.read().decode("utf-8", "replace")
        return code, err


class RawMcp(_Process):
    """``torchscope mcp`` in ``root`` with traces in ``trace_dir``, initialized."""

    def __init__(self, root: Path, trace_dir: Path, env: Optional[dict[str, str]] = None) -> None:
        super().__init__(
            [*TORCHSCOPE, "mcp", "--trace-dir", str(trace_dir)], root, env
        )
        self._rpc(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        self._write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def __enter__(self) -> RawMcp:
        return self

    def _rpc(self, method: str, params: Any, timeout_s: float = 120) -> dict[str, Any]:
        ident = self._next_id
        self._next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        self._write(line.encode() + b"\n")
        deadline = time.monotonic() + timeout_s
        while True:
            text, sep, rest = self._buffer.partition(b"\n")
            if sep:
                self._buffer = rest
                message: dict[str, Any] = json.loads(text)
                if message.get("id") == ident:
                    return message
                continue
            self._read_some(deadline)

    def tool(self, name: str, arguments: dict[str, Any], timeout_s: float = 120) -> tuple[bool, str]:
        """``(is_error, text)`` of a tool call (a JSON-RPC error counts as an error)."""
        reply = self._rpc("tools/call", {"name": name, "arguments": arguments}, timeout_s)
        if "error" in reply:
            return True, f"JSON-RPC error {reply['error']}"
        result = reply["result"]
        text = "\n".join(block.get("text", "") for block in result.get("content", []))
        return bool(result.get("isError")), text
