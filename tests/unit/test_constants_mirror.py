"""Names and defaults shared across the layers are defined once and mirrored where they must be.

- the server's command, method and client-command ids are in the extension's constants module;
- ``JobOptions`` (protocol.py) holds each job option's one default: package.json's settings
  and the CLI's flags carry the same;
- the wire constants (the line-marker prefix, the compile modes) have one definition each;
- the Perfetto port, origin and serving timeout equal the extension's.
"""

import dataclasses
import json
import re
from pathlib import Path

from torchscope.cli import build_parser
from torchscope.cli.common import job_options
from torchscope.ingest import kineto
from torchscope.lsp import constants
from torchscope.protocol import (
    COMPILE_MODES,
    LINE_MARKER_PREFIX,
    PERFETTO_ORIGIN,
    PERFETTO_PORT,
    PERFETTO_TIMEOUT_S,
    JobOptions,
)
from torchscope.worker import line_markers

REPO = Path(__file__).resolve().parents[2]
TS_CONSTANTS = REPO / "extension" / "src" / "constants.ts"
TS_SETTINGS = REPO / "extension" / "src" / "settings.ts"
PACKAGE_JSON = REPO / "package.json"
SERVER = REPO / "server" / "torchscope"


def test_every_server_name_is_in_the_extension_constants() -> None:
    text = TS_CONSTANTS.read_text()
    names = {
        value
        for key, value in vars(constants).items()
        if key.startswith(("CMD_", "REQ_", "NOTIFY_", "CLIENT_")) and isinstance(value, str)
    }
    assert any(key.startswith("CLIENT_") for key in vars(constants))
    missing = sorted(name for name in names if f'"{name}"' not in text)
    assert not missing, f"extension/src/constants.ts lacks {missing}"


def test_client_command_ids_are_defined_only_in_constants() -> None:
    """The ids the server sends (lenses, code actions, hover links) have one definition."""
    client_ids = [v for k, v in vars(constants).items() if k.startswith("CLIENT_")]
    for path in SERVER.rglob("*.py"):
        if path.name == "constants.py":
            continue
        text = path.read_text()
        for value in client_ids:
            assert f'"{value}"' not in text, f"{path.relative_to(REPO)} repeats {value!r}"


def _settings() -> dict[str, dict[str, object]]:
    package = json.loads(PACKAGE_JSON.read_text())
    properties: dict[str, dict[str, object]] = package["contributes"]["configuration"]["properties"]
    return properties


def test_package_json_setting_defaults_equal_job_options() -> None:
    properties = _settings()
    ts = TS_SETTINGS.read_text()
    exposed = [f for f in dataclasses.fields(JobOptions) if f.metadata.get("setting")]
    assert exposed, "no JobOptions field is an editor setting"
    for spec in exposed:
        key = f"torchscope.{spec.metadata['setting']}"
        assert key in properties, f"package.json lacks {key}"
        assert properties[key]["default"] == spec.default, key
        if "minimum" in spec.metadata:
            assert properties[key]["minimum"] == spec.metadata["minimum"], key
        # settings.ts sends it under the field's name
        row = f'key: "{spec.metadata["setting"]}", wire: "{spec.name}"'
        assert row in ts, f"settings.ts JOB_SETTINGS lacks {{{row}}}"


def test_every_job_setting_of_the_extension_is_a_job_option() -> None:
    rows = re.findall(r'key: "([^"]+)", wire: "([^"]+)"', TS_SETTINGS.read_text())
    fields = {f.name: f for f in dataclasses.fields(JobOptions)}
    assert rows
    for key, wire in rows:
        assert wire in fields and fields[wire].metadata.get("setting") == key, (key, wire)


def test_cli_flag_defaults_equal_job_options() -> None:
    parser = build_parser()
    args = parser.parse_args(["profile", "x.py::f"])
    defaults = JobOptions()
    flagged = [f for f in dataclasses.fields(JobOptions) if f.metadata.get("flag")]
    assert {f.name for f in flagged} >= {"steps", "warmup", "timeout_s", "device", "with_stack"}
    for spec in flagged:
        assert getattr(args, spec.name) == getattr(defaults, spec.name), spec.name
    assert job_options(args, None) == defaults


def test_cli_flags_fill_job_options() -> None:
    args = build_parser().parse_args(
        [
            "profile",
            "x.py::f",
            "--steps",
            "7",
            "--timeout",
            "9",
            "--with-stack",
            "--mode",
            "reduce-overhead",
            "--device",
            "cpu",
        ]
    )
    options = job_options(args, "/w")
    assert options == JobOptions(
        steps=7,
        timeout_s=9.0,
        with_stack=True,
        compile_mode="reduce-overhead",
        device="cpu",
        workspace_root="/w",
    )


def test_line_marker_prefix_has_one_definition_per_side() -> None:
    """protocol.py defines it; the ingest (which imports nothing of ours) keeps one copy."""
    assert kineto.LINE_MARKER_PREFIX == LINE_MARKER_PREFIX
    assert line_markers.MARKER_PREFIX == LINE_MARKER_PREFIX
    holders = sorted(
        str(p.relative_to(SERVER))
        for p in SERVER.rglob("*.py")
        if f'"{LINE_MARKER_PREFIX}"' in p.read_text()
    )
    assert holders == ["ingest/kineto.py", "protocol.py"]


def test_compile_modes_have_one_definition_per_language() -> None:
    holders = sorted(
        str(p.relative_to(REPO))
        for p in [*SERVER.rglob("*.py"), *(REPO / "extension" / "src").glob("*.ts")]
        if '"max-autotune-no-cudagraphs"' in p.read_text()
    )
    assert holders == ["extension/src/constants.ts", "server/torchscope/protocol.py"]
    listed = re.search(r"COMPILE_MODES = \[([^\]]*)\]", TS_CONSTANTS.read_text())
    assert listed is not None
    assert tuple(re.findall(r'"([^"]+)"', listed.group(1))) == COMPILE_MODES


def test_perfetto_port_origin_and_timeout_equal_the_extensions() -> None:
    """The Perfetto constants (protocol.py: the CLI's ``--open`` and host/trace_server.py) and
    the extension's trace server and settings."""
    server = (REPO / "extension" / "src" / "traceServer.ts").read_text()
    assert f"export const PERFETTO_PORT = {PERFETTO_PORT};" in server
    timeout_ms = f"{int(PERFETTO_TIMEOUT_S * 1000):_}"
    assert f"export const DEFAULT_SERVE_TIMEOUT_MS = {timeout_ms};" in server
    assert _settings()["torchscope.perfetto.origin"]["default"] == PERFETTO_ORIGIN
    assert f'perfettoOrigin: "{PERFETTO_ORIGIN}"' in TS_SETTINGS.read_text()
