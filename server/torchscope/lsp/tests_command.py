"""``torchscope.collectTests {uri, args?, cwd?, timeout_s?}``: the tests **Profile this function
in a run…** offers, as the Python extension's test explorer would list them (VS Code gives no
access to another extension's tests: docs/design-notes.md).

``args`` are ``python.testing.pytestArgs``, ``cwd`` is ``python.testing.cwd`` (relative to the
workspace root; default the root). pytest collects them in the configured interpreter, in a
child process under a timeout (``host/test_collection.py``). The answer is ``{ok, tests:
[{nodeid, file, imports_target}], cwd}``, the tests whose file imports ``uri``'s module first;
when collecting fails or times out it is ``{ok: false, error, tests, cwd}`` with the tests that
were collected, and one warning message says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from torchscope.host.test_collection import (
    COLLECT_TIMEOUT_S,
    CollectionFailed,
    collect_tests,
    rank_tests,
)
from torchscope.lsp.constants import CMD_COLLECT_TESTS
from torchscope.lsp.server import TorchscopeServer
from torchscope.protocol import to_builtins

USAGE = (
    f"{CMD_COLLECT_TESTS} takes {{uri, args?, cwd?, timeout_s?}}: the function's file: URI, "
    "pytest's arguments (a list of strings), the folder to collect in, seconds"
)


def _parse(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> tuple[Path, list[str], Path, float]:
    raw = arguments[0] if len(arguments) == 1 and isinstance(arguments[0], dict) else {}
    uri, args, cwd = raw.get("uri"), raw.get("args", []), raw.get("cwd")
    timeout_s = raw.get("timeout_s", COLLECT_TIMEOUT_S)
    file = to_fs_path(uri) if isinstance(uri, str) and uri.startswith("file:") else None
    root = ls.workspace_root() or (Path(file).parent if file else Path.cwd())
    folder = root / cwd if isinstance(cwd, str) and cwd else root
    if (
        file is None
        or not isinstance(args, list)
        or not all(isinstance(a, str) for a in args)
        or (cwd is not None and not isinstance(cwd, str))
        or isinstance(timeout_s, bool)
        or not isinstance(timeout_s, (int, float))
        or timeout_s <= 0
    ):
        raise ValueError(f"{USAGE}; got {raw or list(arguments)!r}")
    if not folder.is_dir():
        raise ValueError(f"python.testing.cwd {folder}: no such folder — fix the setting")
    return Path(file), list(args), folder.resolve(), float(timeout_s)


async def collect(ls: TorchscopeServer, arguments: tuple[Any, ...]) -> dict[str, Any]:
    try:
        file, args, folder, timeout_s = _parse(ls, arguments)
    except ValueError as exc:
        ls.show(types.MessageType.Error, f"torchscope: {exc}")
        return {"ok": False, "error": str(exc), "tests": [], "cwd": None}
    python = ls.settings.worker_python
    try:
        found = await collect_tests(python, folder, args, timeout_s)
    except CollectionFailed as failed:
        ls.show(types.MessageType.Warning, f"torchscope: {failed.message}")
        tests = [to_builtins(t) for t in rank_tests(failed.tests, folder, file)]
        return {"ok": False, "error": failed.message, "tests": tests, "cwd": str(folder)}
    tests = [to_builtins(t) for t in rank_tests(found, folder, file)]
    ls.log(f"collected {len(tests)} tests in {folder}")
    return {"ok": True, "tests": tests, "cwd": str(folder)}


def register(server: TorchscopeServer) -> None:
    @server.command(CMD_COLLECT_TESTS)
    async def handler(ls: TorchscopeServer, *arguments: Any) -> dict[str, Any]:
        return await collect(ls, arguments)
