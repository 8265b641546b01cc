"""The worker's environment and when it starts, over real LSP (issue 53): the ``env`` and
``env_file`` settings reach the process that runs the user's code (``CUDA_VISIBLE_DEVICES``
chooses the GPU there), a launch configuration's ``env``/``env_file`` reach the program of
**Profile in a run**, ``prestart: "off"`` starts nothing before the first job, and a bad env
file is one message while the server keeps serving.

The worker is found by its environment (``/proc/PID/environ`` holds a path only these tests
set), and the fixture function writes what it saw (tests/fixtures/workspace/env_probe.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.conftest import FIXTURES, REPO
from tests.lsp.conftest import SERVER_COMMAND, SERVER_ENV
from tests.reliability.lsp_helpers import command_and_diagnostics, profile

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROBE = FIXTURES / "env_probe.py"
CALL = "env_probe(torch.ones(4))"
FAST = {"steps": 2, "warmup": 1, "timing_budget_s": 0.3}


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(
        item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item
    )


def processes_with(name: str, value: str) -> list[dict[str, str]]:
    """The environments of the processes whose ``name`` is ``value`` (only a worker's is)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = environ_of(int(entry.name))
            except OSError:
                continue
            if env.get(name) == value:
                found.append(env)
    return found


async def wait_for_worker(out: Path, timeout_s: float = 90) -> dict[str, str]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        found = processes_with("TORCHSCOPE_PROBE_OUT", str(out))
        if found:
            return found[0]
        await asyncio.sleep(0.2)
    raise AssertionError(f"no process has TORCHSCOPE_PROBE_OUT={out}")


async def start(client: LanguageClient, settings: dict[str, Any]) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(
                window=types.WindowClientCapabilities(work_done_progress=True)
            ),
            root_uri=REPO.as_uri(),
            initialization_options={"settings": settings},
        )
    )


class Probe:
    """Where a session's probe writes, and the settings that say so."""

    def __init__(self, folder: Path) -> None:
        self.out = folder / "seen.json"
        self.env_file = folder / "worker.env"
        self.env_file.write_text(
            "# the settings' env file\nexport TORCHSCOPE_FROM_FILE='from file'\n"
            "TORCHSCOPE_OVERRIDDEN=file\n"
        )

    def settings(self, **more: Any) -> dict[str, Any]:
        env = {
            "CUDA_VISIBLE_DEVICES": "0",
            "TORCHSCOPE_FROM_SETTING": "setting",
            "TORCHSCOPE_OVERRIDDEN": "setting",
            "TORCHSCOPE_PROBE_OUT": str(self.out),
        }
        return {
            "env": env,
            "env_file": str(self.env_file),
            "trace_dir": str(self.out.parent),
            **more,
        }

    def seen(self) -> dict[str, Any]:
        seen: dict[str, Any] = json.loads(self.out.read_text())
        self.out.unlink()
        return seen


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    return Probe(tmp_path_factory.mktemp("env-auto"))


@pytest.fixture(scope="module")
def quiet_probe(tmp_path_factory: pytest.TempPathFactory) -> Probe:
    return Probe(tmp_path_factory.mktemp("env-off"))


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV),
)
async def client(lsp_client: LanguageClient, probe: Probe) -> AsyncIterator[None]:
    await start(lsp_client, probe.settings())
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV),
)
async def quiet(lsp_client: LanguageClient, quiet_probe: Probe) -> AsyncIterator[None]:
    await start(lsp_client, quiet_probe.settings(prestart="off"))
    yield
    await lsp_client.shutdown_session()


async def test_the_prestarted_worker_has_the_settings_environment(
    client: LanguageClient, probe: Probe
) -> None:
    env = await wait_for_worker(probe.out)  # prestarted: no job asked for it
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["TORCHSCOPE_FROM_SETTING"] == "setting"
    assert env["TORCHSCOPE_FROM_FILE"] == "from file"
    assert env["TORCHSCOPE_OVERRIDDEN"] == "setting"  # env over env_file
    assert env["PATH"] == os.environ["PATH"]  # over the server's own environment, not instead


async def test_the_profiled_code_sees_the_settings_environment(
    client: LanguageClient, probe: Probe
) -> None:
    result, _ = await profile(client, PROBE, "env_probe", call=CALL, **FAST)
    assert result["ok"], result
    seen = probe.seen()
    assert seen["CUDA_VISIBLE_DEVICES"] == "0" and seen["TORCHSCOPE_FROM_FILE"] == "from file"
    assert seen["TORCHSCOPE_OVERRIDDEN"] == "setting" and seen["TORCHSCOPE_FROM_LAUNCH"] is None
    assert seen["cuda_initialized"] is False  # a CPU job makes no CUDA context


async def test_profile_in_a_run_honours_the_launch_configuration_env(
    client: LanguageClient, probe: Probe
) -> None:
    launch_file = probe.out.parent / "launch.env"
    launch_file.write_text('TORCHSCOPE_FROM_LAUNCH_FILE="launch file"\nTORCHSCOPE_OVERRIDDEN=x\n')
    args = {
        "uri": PROBE.as_uri(),
        "qualname": "env_probe",
        "entry": [sys.executable, str(PROBE)],
        "calls": 2,
        "env": {"TORCHSCOPE_FROM_LAUNCH": "launch", "TORCHSCOPE_OVERRIDDEN": "launch"},
        "env_file": str(launch_file),
    } | FAST
    result, _ = await command_and_diagnostics(client, "torchscope.profileInRun", args)
    assert result["ok"], result
    seen = probe.seen()
    assert seen["TORCHSCOPE_FROM_LAUNCH"] == "launch"
    assert seen["TORCHSCOPE_FROM_LAUNCH_FILE"] == "launch file"
    assert seen["TORCHSCOPE_OVERRIDDEN"] == "launch"  # the launch configuration's env wins
    assert seen["TORCHSCOPE_FROM_SETTING"] == "setting"  # over the settings', not instead
    # The next job's worker has the settings' environment again, without the launch's.
    result, _ = await profile(client, PROBE, "env_probe", call=CALL, **FAST)
    assert result["ok"], result
    assert probe.seen()["TORCHSCOPE_FROM_LAUNCH"] is None


async def test_a_bad_env_file_is_one_message_and_the_server_keeps_serving(
    client: LanguageClient, probe: Probe
) -> None:
    bad = probe.out.parent / "bad.env"
    bad.write_text("TORCHSCOPE_FROM_FILE=fine\nthis is not a variable\n")
    shown = len(client.messages)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"torchscope": probe.settings(env_file=str(bad))}
        )
    )
    result, _ = await profile(client, PROBE, "env_probe", call=CALL, **FAST)
    assert result["ok"], result
    [message] = [m for m in client.messages[shown:] if m.type == types.MessageType.Error]
    assert f"env file {bad} line 2: expected NAME=VALUE" in message.message, message.message
    assert "\n" not in message.message
    seen = probe.seen()  # the worker started with the settings' env, without the file
    assert seen["TORCHSCOPE_FROM_SETTING"] == "setting" and seen["TORCHSCOPE_FROM_FILE"] is None


async def test_prestart_off_starts_no_worker_before_the_first_job(
    quiet: LanguageClient, quiet_probe: Probe
) -> None:
    await asyncio.sleep(3)  # a prestart would have started the worker by now (it did above)
    assert processes_with("TORCHSCOPE_PROBE_OUT", str(quiet_probe.out)) == []
    assert any("not prestarted" in m.message for m in quiet.log_messages)
    result, _ = await profile(quiet, PROBE, "env_probe", call=CALL, **FAST)
    assert result["ok"], result
    assert quiet_probe.seen()["TORCHSCOPE_FROM_SETTING"] == "setting"
    assert processes_with("TORCHSCOPE_PROBE_OUT", str(quiet_probe.out))  # started by the job
