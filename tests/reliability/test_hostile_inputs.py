"""The hostile-input table (issue 49): each input the docs promise one message for, through
each face — the CLI (``torchscope profile`` / ``analyze``), the language server
(``torchscope.profile`` / ``torchscope.analyzeTrace``, raw JSON-RPC: ``faces.RawLsp``) and the
MCP server (``profile_function`` / ``analyze_trace``, raw JSON lines: ``faces.RawMcp``). Each
answer is one message naming the problem, never a traceback, and the server answers the next
request. Run with ``-s`` to print the table (``TABLE|input|face|answer``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from tests.reliability.conftest import ENV, TORCHSCOPE
from tests.reliability.faces import RawLsp, RawMcp

GOOD = "import torch\n\n\ndef good():\n    return torch.ones(2) + 1\n"
#: On the command line a lone surrogate is bytes that are not UTF-8 (Python decodes them to
#: U+DC80..U+DCFF); through JSON it is any escape ``\ud800``.
CLI_LONE, JSON_LONE = "\udcff", "\ud800"

def huge_call(lone: str) -> str:
    """300k terms through JSON; 50k on the command line (one argument is at most 128 KiB)."""
    return "good(" + "+".join(["1"] * (50_000 if lone == CLI_LONE else 300_000)) + ")"



@dataclass(frozen=True)
class Input:
    name: str
    needle: str
    """In every face's one message."""
    make: Callable[[Path, str], tuple[str, str, Optional[str]]]
    """``(folder, lone)`` → ``(file, qualname, call)`` to profile, ``lone`` the face's lone
    surrogate."""
    analyze: bool = False
    """The input is a trace to analyse (``file``), not a function to profile."""


def _fifo(folder: Path, lone: str) -> tuple[str, str, Optional[str]]:
    os.mkfifo(folder / "pipe.py")
    return str(folder / "pipe.py"), "good", None


def _directory(folder: Path, lone: str) -> tuple[str, str, Optional[str]]:
    (folder / "package.py").mkdir()
    return str(folder / "package.py"), "good", None


def _oversized(folder: Path, lone: str) -> tuple[str, str, Optional[str]]:
    path = folder / "huge.py"
    with open(path, "wb") as out:
        out.truncate(11 << 20)  # sparse: 11 MB of NULs, no disk used
    return str(path), "good", None


def _good(folder: Path) -> str:
    path = folder / "good.py"
    if not path.exists():
        path.write_text(GOOD)
    return str(path)


def _corrupt_log(folder: Path, lone: str) -> tuple[str, str, Optional[str]]:
    """A trace that is gone, in a folder whose ``removed-traces.log`` is garbage."""
    gone = folder / "gone.pt.trace.json.gz"
    (folder / "removed-traces.log").write_bytes(
        b"not-a-time\t%s\n\xff\xfe\x00\n\t\n1e999\t%s\nnan\t%s\n"
        % (bytes(gone), bytes(gone), bytes(gone))
    )
    return str(gone), "", None


INPUTS = [
    Input("source is a FIFO", "is a FIFO (named pipe), not a regular file", _fifo),
    Input("source is /dev/zero", "is a device, not a regular file",
          lambda f, lone: ("/dev/zero", "good", None)),
    Input("source is a directory", "is a directory, not a regular file", _directory),
    Input("source over 10 MB (sparse)", "over the 10.0 MB", _oversized),
    Input("50k/300k-term call expression", "characters, over the 20,000 read",
          lambda f, lone: (_good(f), "good", huge_call(lone))),
    Input("lone surrogate in the call", "lone surrogate",
          lambda f, lone: (_good(f), "good", f"good({lone})")),
    Input("lone surrogate in the path", "lone surrogate",
          lambda f, lone: (str(f / f"a{lone}.py"), "good", None)),
    Input("lone surrogate in the qualname", "lone surrogate",
          lambda f, lone: (_good(f), f"go{lone}od", None)),
    Input("corrupt removed-traces.log", "no such file", _corrupt_log, analyze=True),
]
IDS = [i.name for i in INPUTS]
TABLE: list[tuple[str, str, str]] = []


def _say(name: str, face: str, answer: str) -> None:
    first = answer.strip().splitlines()[0] if answer.strip() else "(nothing)"
    TABLE.append((name, face, first))
    print(f"TABLE|{name}|{face}|{first}")


def _folder(tmp_path: Path, case: Input, face: str) -> Path:
    folder = tmp_path / face
    folder.mkdir()
    return folder


def _uri(file: str) -> str:
    """A ``file://`` URI that keeps a lone surrogate as it is (``Path.as_uri`` would
    percent-encode its UTF-8, which it has none of)."""
    return "file://" + file


@pytest.mark.parametrize("case", INPUTS, ids=IDS)
def test_cli(case: Input, tmp_path: Path) -> None:
    folder = _folder(tmp_path, case, "cli")
    file, qualname, call = case.make(folder, CLI_LONE)
    if case.analyze:
        command = [*TORCHSCOPE, "analyze", file]
    else:
        command = [*TORCHSCOPE, "profile", f"{file}::{qualname}", "-q", "--steps", "1",
                   "--trace-dir", str(tmp_path / "traces"), *(["--call", call] if call else [])]  # fmt: skip
    done = subprocess.run(command, cwd=folder, env=ENV, capture_output=True, timeout=120)
    err = done.stderr.decode("utf-8", "replace")
    _say(case.name, "CLI", f"exit {done.returncode}: {err}")
    assert done.returncode in (1, 2), err
    assert "Traceback" not in err and case.needle in err, err
    assert [line for line in err.splitlines() if line.strip()] == [err.strip()], err
    assert err.startswith("torchscope: "), err


@pytest.fixture(scope="module")
def lsp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawLsp]:
    root = tmp_path_factory.mktemp("lsp-root")
    _good(root)
    with RawLsp(root, tmp_path_factory.mktemp("lsp-traces")) as server:
        yield server
        code, err = server.shutdown()
        assert code == 0 and "Traceback" not in err, err


def _lsp_answers(lsp: RawLsp, root: Path) -> None:
    """The server still answers: the function at a line of a good file."""
    good = _good(root)
    reply, _ = lsp.request("torchscope/target", {"uri": Path(good).as_uri(), "line": 4}, 60)
    assert reply["result"]["qualname"] == "good", reply


@pytest.mark.parametrize("case", INPUTS, ids=IDS)
def test_lsp(lsp: RawLsp, case: Input, tmp_path: Path) -> None:
    folder = _folder(tmp_path, case, "lsp")
    file, qualname, call = case.make(folder, JSON_LONE)
    if case.analyze:
        reply, shown = lsp.command("torchscope.analyzeTrace", {"path": file})
    else:
        if qualname != "good":  # the editor names a function by its line: the call takes it
            call = f"{qualname}()"
        reply, shown = lsp.command(
            "torchscope.profile", {"uri": _uri(file), "line": 3, **({"call": call} if call else {})}
        )
        target, _ = lsp.request("torchscope/target", {"uri": _uri(file), "line": 3}, 10)
        assert "result" in target or "lone surrogate" in str(target["error"]), target
    if "error" in reply:  # refused at the edge: one JSON-RPC error, the request not run
        said = reply["error"]["message"]
        assert reply["error"]["code"] == -32602, reply
        assert not shown, shown
    else:
        result: dict[str, Any] = reply["result"]
        assert not result["ok"], result
        said = result["error"]
        assert len(shown) == 1 and said in shown[0], shown
    _say(case.name, "LSP", said)
    assert case.needle in said and "Traceback" not in said, said
    _lsp_answers(lsp, folder)


def test_mcp(tmp_path: Path) -> None:
    """Every input through one MCP server (one test: the conftest allows no server process
    between tests but the language server's); it answers after each, and ends with exit 0."""
    (tmp_path / "root").mkdir()
    with RawMcp(tmp_path / "root", tmp_path / "traces") as mcp:
        for case in INPUTS:
            folder = tmp_path / case.name.replace("/", "-")
            folder.mkdir()
            file, qualname, call = case.make(folder, JSON_LONE)
            if case.analyze:
                is_error, said = mcp.tool("analyze_trace", {"path": file})
            else:
                asked = {"file": file, "qualname": qualname, **({"call": call} if call else {})}
                is_error, said = mcp.tool("profile_function", asked)
            _say(case.name, "MCP", said)
            assert is_error and case.needle in said, said
            assert "Traceback" not in said and "Error executing tool" not in said, said
            again, text = mcp.tool("explain_finding", {"rule": "sync"}, 60)
            assert not again, text
        code, err = mcp.close()
    assert code == 0 and "Traceback" not in err, err


def test_an_unusable_trace_folder_through_each_face(tmp_path: Path) -> None:
    """A trace folder that cannot be made (its parent is a file; root ignores permissions,
    not this): one message from each face before a worker runs the job, and the servers
    answer the next request."""
    root = tmp_path / "root"
    root.mkdir()
    good = _good(root)
    (tmp_path / "a-file").write_text("not a folder")
    traces = tmp_path / "a-file" / "traces"
    needle = f"trace folder {traces}: cannot be made: {traces.parent} is a file, not a folder"
    done = subprocess.run(
        [*TORCHSCOPE, "profile", "good.py::good", "-q", "--trace-dir", str(traces)],
        cwd=root, env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    _say("unusable trace folder", "CLI", f"exit {done.returncode}: {done.stderr}")
    assert done.returncode == 1 and needle in done.stderr and "Traceback" not in done.stderr
    with RawLsp(root, traces) as lsp:
        reply, shown = lsp.command("torchscope.profile", {"uri": Path(good).as_uri(), "line": 3})
        _say("unusable trace folder", "LSP", reply["result"]["error"])
        assert needle in reply["result"]["error"] and len(shown) == 1, reply
        _lsp_answers(lsp, root)
        assert lsp.shutdown()[0] == 0
    with RawMcp(root, traces) as mcp:
        is_error, said = mcp.tool("profile_function", {"file": good, "qualname": "good"})
        _say("unusable trace folder", "MCP", said)
        assert is_error and needle in said and "Traceback" not in said, said
        assert not mcp.tool("explain_finding", {"rule": "sync"})[0]
        assert mcp.close()[0] == 0
