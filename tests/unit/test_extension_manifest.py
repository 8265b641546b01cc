"""The extension's face, held to package.json (issue 53): the marketplace README
(extension/README.md) names every contributed command and setting and the same Python floor
as pyproject.toml's ``requires-python`` (and the extension's own check, interpreter.ts); the
editor's context menu is **Profile this function** then the ``torchscope`` submenu with the
rest; the Getting Started walkthrough's steps run commands that exist and show files the
``.vsix`` ships."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = json.loads((REPO / "package.json").read_text(encoding="utf-8"))
CONTRIBUTES: dict[str, Any] = PACKAGE["contributes"]
README = (REPO / "extension" / "README.md").read_text(encoding="utf-8")
#: Commands of other extensions or of VS Code a walkthrough step may run.
FOREIGN = {"python.setInterpreter", "workbench.action.openSettings"}


def python_floor() -> tuple[int, int]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'requires-python\s*=\s*">=(\d+)\.(\d+)"', text)
    assert found, 'pyproject.toml has no requires-python = ">=X.Y"'
    return int(found.group(1)), int(found.group(2))


def test_the_readme_names_every_command_and_setting() -> None:
    titles = [f"{c['category']}: {c['title']}" for c in CONTRIBUTES["commands"]]
    missing = [t for t in titles if f"| {t} |" not in README]
    assert not missing, f"extension/README.md's Commands table lacks {missing}"
    settings = CONTRIBUTES["configuration"]["properties"]
    rows = set(re.findall(r"^\| `(torchscope\.[\w.]+)` \|", README, flags=re.MULTILINE))
    assert rows == set(settings), (
        f"extension/README.md's Settings table: missing {sorted(set(settings) - rows)}, "
        f"not contributed {sorted(rows - set(settings))}"
    )


def test_the_python_floor_is_pyprojects_everywhere() -> None:
    floor = python_floor()
    assert floor >= (3, 9)
    said = set(re.findall(r"Python (\d+)\.(\d+) or newer", README))
    assert said == {tuple(str(n) for n in floor)}, said
    check = (REPO / "extension" / "src" / "interpreter.ts").read_text(encoding="utf-8")
    found = re.search(r"MIN_PYTHON_VERSION[^=]*= \[(\d+), (\d+)\]", check)
    assert found and (int(found.group(1)), int(found.group(2))) == floor
    setting = CONTRIBUTES["configuration"]["properties"]["torchscope.pythonPath"]
    assert f"Python {floor[0]}.{floor[1]} or newer" in setting["markdownDescription"]


def test_the_context_menu_is_profile_then_the_submenu() -> None:
    menus = CONTRIBUTES["menus"]
    top = menus["editor/context"]
    assert [m.get("command") or m.get("submenu") for m in top] == [
        "torchscope.profileFunction",
        "torchscope.editorContext",
    ]
    assert top[0]["group"] < top[1]["group"]  # Profile this function above the submenu
    [submenu] = CONTRIBUTES["submenus"]
    assert submenu == {"id": "torchscope.editorContext", "label": "torchscope"}
    commands = {c["command"] for c in CONTRIBUTES["commands"]}
    inside = [m["command"] for m in menus["torchscope.editorContext"]]
    assert "torchscope.profileFunctionInRun" in inside and set(inside) <= commands
    assert "torchscope.profileFunction" not in inside


def _shipped(path: str) -> bool:
    """Whether .vscodeignore lets ``path`` into the .vsix (its last matching rule wins)."""
    shipped = True
    for rule in (REPO / ".vscodeignore").read_text().splitlines():
        rule = rule.strip()
        if not rule or rule.startswith("#"):
            continue
        negated = rule.startswith("!")
        pattern = rule.lstrip("!")
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, pattern.rstrip("*") + "*"):
            shipped = negated
    return shipped


def test_the_walkthrough_runs_real_commands_and_ships_its_pages() -> None:
    [walkthrough] = CONTRIBUTES["walkthroughs"]
    steps = walkthrough["steps"]
    assert [s["id"] for s in steps] == ["pickInterpreter", "profileExample", "openTrace"]
    commands = {c["command"] for c in CONTRIBUTES["commands"]} | FOREIGN
    for step in steps:
        linked = re.findall(r"\(command:([\w.]+)", step["description"])
        assert linked and set(linked) <= commands, (step["id"], linked)
        page = step["media"]["markdown"]
        assert (REPO / page).is_file() and _shipped(page), page
    # Open the example copies the guide's example, which the .vsix carries.
    assert _shipped("examples/matmul_add.py")
    assert not _shipped("examples/nanogpt_step.py") and not _shipped("server/torchscope/cli/run.py")


def test_the_bundled_dependencies_support_the_python_floor() -> None:
    """The .vsix's pure-Python dependencies (``extension/bundled/libs``, built by
    ``npm run package``) run on the floor the README states (cattrs 26 and msgpack 1.2 need
    3.10); skipped before the first build."""
    libs = REPO / "extension" / "bundled" / "libs"
    metadata = sorted(libs.glob("*.dist-info/METADATA"))
    if not metadata:
        pytest.skip("extension/bundled/libs is not built (npm run package builds it)")
    floor = python_floor()
    for path in metadata:
        found = re.search(r"^Requires-Python: >=(\d+)\.(\d+)", path.read_text(), re.MULTILINE)
        if found:
            needs = (int(found.group(1)), int(found.group(2)))
            assert needs <= floor, f"{path.parent.name} needs Python {needs}, the floor is {floor}"


def test_the_bundled_server_starts_on_the_oldest_python() -> None:
    """The .vsix's server (``extension/launcher/launch.py`` with ``bundled/``) answers
    ``initialize`` under CPython 3.9: with cattrs 26 it failed to import there
    (``inspect.get_annotations``). Skipped before the first build or without a 3.9."""
    import asyncio

    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from tests.unit.test_oldest_python import _python39

    python = _python39()
    if python is None:
        pytest.skip("no CPython 3.9 on PATH or under ~/.pyenv")
    if not (REPO / "extension" / "bundled" / "tool" / "torchscope").is_dir():
        pytest.skip("extension/bundled is not built (npm run package builds it)")

    async def session() -> str:
        client = LanguageClient("manifest-test", "1")
        await client.start_io(python, str(REPO / "extension" / "launcher" / "launch.py"), "serve")
        try:
            params = types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=REPO.as_uri(),
                initialization_options={"settings": {"prestart": "off"}},  # no torch there
            )
            result = await asyncio.wait_for(client.initialize_async(params), 60)
            client.initialized(types.InitializedParams())
            await asyncio.wait_for(client.shutdown_async(None), 30)
            client.exit(None)
            return result.server_info.name if result.server_info else ""
        finally:
            await client.stop()

    assert asyncio.run(session()) == "torchscope"
