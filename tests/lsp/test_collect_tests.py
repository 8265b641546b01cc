"""``torchscope.collectTests`` over real LSP: the real server collects a workspace's tests with
pytest in a child process, as the Python extension's test explorer would (its settings:
``pytestArgs``, ``cwd``), the tests whose file imports the function's module first; a
collection that fails or runs past its timeout is one warning, leaves nothing running, and
the server keeps serving."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from torchscope.host import process_tree

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


async def collect(client: LanguageClient, args: dict[str, Any]) -> dict[str, Any]:
    params = types.ExecuteCommandParams(command="torchscope.collectTests", arguments=[args])
    answer: Any = client.workspace_execute_command_async(params)
    result: dict[str, Any] = await asyncio.wait_for(answer, 120)
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _write(tmp_path, "conftest.py", "")  # its folder goes on sys.path: tests import model
    _write(tmp_path, "model.py", "def scale(x, factor):\n    return x * factor\n")
    _write(tmp_path, "tests/test_a_other.py", "def test_unrelated():\n    assert True\n")
    _write(
        tmp_path,
        "tests/test_model.py",
        """\
        import pytest
        from model import scale


        @pytest.mark.parametrize("factor", [1, 2])
        def test_scale(factor):
            assert scale(3, factor) == 3 * factor


        class TestModel:
            def test_twice(self):
                assert scale(2, 2) == 4
        """,
    )
    return tmp_path


async def test_the_tests_of_the_functions_module_come_first(
    client: LanguageClient, project: Path
) -> None:
    uri = (project / "model.py").as_uri()
    result = await collect(client, {"uri": uri, "args": ["tests"], "cwd": str(project)})
    assert result["ok"], result
    assert result["cwd"] == str(project.resolve())
    nodeids = [t["nodeid"] for t in result["tests"]]
    assert nodeids == [  # pytest's order is test_a_other.py first
        "tests/test_model.py::test_scale[1]",
        "tests/test_model.py::test_scale[2]",
        "tests/test_model.py::TestModel::test_twice",
        "tests/test_a_other.py::test_unrelated",
    ]
    assert [t["imports_target"] for t in result["tests"]] == [True, True, True, False]
    assert result["tests"][0]["file"] == str(project / "tests" / "test_model.py")
    assert not (project / ".pytest_cache").exists()  # collecting writes nothing


async def test_a_failed_collection_is_one_warning_with_the_tests_it_found(
    client: LanguageClient, project: Path
) -> None:
    _write(project, "tests/test_broken.py", "import no_such_module\n\ndef test_x():\n    pass\n")
    shown = len(client.messages)
    uri = (project / "model.py").as_uri()
    result = await collect(client, {"uri": uri, "args": ["tests"], "cwd": str(project)})
    assert not result["ok"]
    assert "No module named 'no_such_module'" in result["error"], result["error"]
    assert "tests/test_broken.py" in result["error"]
    assert len(result["tests"]) == 4  # those it did collect
    [message] = client.messages[shown:]
    assert message.type == types.MessageType.Warning and "could not collect" in message.message


async def test_a_collection_past_its_timeout_is_stopped_with_all_it_started(
    client: LanguageClient, tmp_path: Path
) -> None:
    pids = tmp_path / "pids.txt"
    _write(
        tmp_path,
        "conftest.py",
        f"""\
        import os, subprocess, time
        child = subprocess.Popen(["sleep", "300"])
        with open({str(pids)!r}, "w") as f:
            f.write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(300)
        """,
    )
    _write(tmp_path, "test_x.py", "def test_x():\n    pass\n")
    shown = len(client.messages)
    uri = (tmp_path / "test_x.py").as_uri()
    result = await collect(client, {"uri": uri, "cwd": str(tmp_path), "timeout_s": 5})
    assert not result["ok"] and result["tests"] == []
    assert "took over 5 s and was stopped" in result["error"], result["error"]
    [message] = client.messages[shown:]
    assert message.type == types.MessageType.Warning
    for pid in map(int, pids.read_text().split()):  # pytest and the process it started
        assert not process_tree.alive(pid), f"{pid} still running"


async def test_bad_arguments_are_one_error_and_the_server_keeps_serving(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = (tmp_path / "model.py").as_uri()
    for args, said in [
        ({"uri": uri, "args": "tests"}, "pytest's arguments (a list of strings)"),
        ({"uri": uri, "cwd": str(tmp_path / "nope")}, "nope: no such folder"),
    ]:
        shown = len(client.messages)
        result = await collect(client, args)
        assert not result["ok"] and said in result["error"], result
        [message] = client.messages[shown:]
        assert message.type == types.MessageType.Error
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=0),
        )
    )
    assert hover is None
