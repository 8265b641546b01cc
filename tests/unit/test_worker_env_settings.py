"""The worker's environment settings (issue 53): the ``.env`` format VS Code's Python
extension reads, ``env`` over ``env_file``, the ``prestart`` and ``env`` settings' checks, and
the GPU names the handshake gives without initialising CUDA."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscope.host.env_file import EnvFileError, environment, read_env_file
from torchscope.lsp.settings import Settings, SettingsError
from torchscope.worker.gpu_names import visible_names


def test_an_env_file_as_the_python_extension_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHSCOPE_HOST_VAR", "host")
    path = tmp_path / ".env"
    path.write_text(
        "# a comment\n\n"
        "PLAIN=one\n"
        "export EXPORTED = two \n"
        "SINGLE='${PLAIN} stays'\n"
        'DOUBLE="a\\nb"\n'
        "EXPANDED=${PLAIN}-${TORCHSCOPE_HOST_VAR}-${UNSET}\n"
        "COMMENTED=value # not part of it\n"
        "EMPTY=\n"
    )
    assert read_env_file(path) == {
        "PLAIN": "one",
        "EXPORTED": "two",
        "SINGLE": "${PLAIN} stays",
        "DOUBLE": "a\nb",
        "EXPANDED": "one-host-",
        "COMMENTED": "value",
        "EMPTY": "",
    }


def test_a_missing_env_file_sets_nothing_and_a_bad_line_is_named(tmp_path: Path) -> None:
    assert read_env_file(tmp_path / "absent.env") == {}
    bad = tmp_path / "bad.env"
    bad.write_text("A=1\nnot a variable\n")
    with pytest.raises(EnvFileError, match=r"bad\.env line 2: expected NAME=VALUE"):
        read_env_file(bad)


def test_env_wins_over_the_env_file_relative_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "w.env").write_text("A=file\nB=file\n")
    assert environment({"B": "map"}, "w.env", tmp_path) == {"A": "file", "B": "map"}
    assert environment({"B": "map"}, None, tmp_path) == {"B": "map"}


def test_the_worker_settings_are_checked() -> None:
    settings = Settings.from_options(
        {"settings": {"prestart": "off", "env": {"CUDA_VISIBLE_DEVICES": 1}, "env_file": "x.env"}}
    )
    assert settings.prestart == "off" and settings.env == {"CUDA_VISIBLE_DEVICES": "1"}
    assert settings.env_file == "x.env"
    assert Settings().prestart == "auto" and Settings().env == {} and Settings().env_file is None
    assert Settings().updated({"env_file": ""}).env_file is None  # cleared
    with pytest.raises(SettingsError, match="'prestart' must be one of auto, off"):
        Settings.from_options({"prestart": "always"})
    with pytest.raises(SettingsError, match="'env' must map variable names to text"):
        Settings.from_options({"env": {"A": ["list"]}})
    with pytest.raises(SettingsError, match="'env' must map"):
        Settings.from_options({"env": "A=1"})


def test_gpu_names_follow_cuda_visible_devices() -> None:
    names = ["A100", "H100", "L4"]
    assert visible_names(names, None, 3) == names
    assert visible_names(names, "2,0", 2) == ["L4", "A100"]
    assert visible_names(names, "1", 1) == ["H100"]
    # UUIDs or MIG instances: the model when all are one, else a plain name per device.
    assert visible_names(["H100", "H100"], "GPU-1234", 1) == ["H100"]
    assert visible_names(names, "GPU-1234,GPU-5678", 2) == ["CUDA device 0", "CUDA device 1"]
    assert visible_names(names, "7", 1) == ["CUDA device 0"]  # NVML and CUDA disagree


def test_the_extension_sends_what_the_server_reads() -> None:
    """The mirror of extension/src/settings.ts and package.json for the worker's settings."""
    import json

    from tests.conftest import REPO
    from torchscope.lsp.settings import PRESTART_CHOICES

    sent = (REPO / "extension" / "src" / "settings.ts").read_text()
    for row in ("prestart: s.prestart,", "env: s.env,", "env_file: envFile,"):
        assert row in sent, f"serverSettings lacks {row}"
    package = json.loads((REPO / "package.json").read_text())
    properties = package["contributes"]["configuration"]["properties"]
    assert tuple(properties["torchscope.prestart"]["enum"]) == PRESTART_CHOICES
    assert properties["torchscope.prestart"]["default"] == Settings().prestart
    assert properties["torchscope.env"]["default"] == Settings().env
    assert properties["torchscope.envFile"]["default"] == ""
    read = Settings().updated({"prestart": "off", "env": {"A": "1"}, "env_file": "/e"})
    assert (read.prestart, read.env, read.env_file) == ("off", {"A": "1"}, "/e")
