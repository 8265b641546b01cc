"""Each option of a job and of ``torchscope run`` has one default and one set of limits, in
``protocol.py`` (``JobOptions``, ``RunOptions``): the CLI's flags, the editor command's checks and
the MCP tools' parameters are made from them. Changing a default or a limit there changes every
face; restating one by hand in a face fails here."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest

from torchscope.cli import build_parser
from torchscope.protocol import JobOptions, RunOptions, RunRequest, parse_size

RUN_ARGS = ["run", "--target", "model.py::fn", "--", "python", "train.py"]


def _parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def _refused(argv: list[str]) -> bool:
    try:
        _parse(argv)
    except SystemExit:
        return True
    return False


def _flagged(options: type[Any]) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(options) if f.metadata.get("flag")]


def _below(spec: dataclasses.Field[Any]) -> str:
    return str(spec.metadata["minimum"] - 1)


def test_the_run_command_s_flags_are_run_options() -> None:
    args = _parse(RUN_ARGS)
    from torchscope.cli.common import run_options

    assert run_options(args) == RunOptions()
    for spec in _flagged(RunOptions):
        assert getattr(args, spec.name) == spec.default, spec.name
        if "minimum" in spec.metadata:
            assert _refused([*RUN_ARGS[:3], spec.metadata["flag"], _below(spec), *RUN_ARGS[3:]])
        for choice in spec.metadata.get("choices", ()):
            argv = [*RUN_ARGS[:3], spec.metadata["flag"], choice, *RUN_ARGS[3:]]
            assert getattr(_parse(argv), spec.name) == choice
    # the request the run sends: RunRequest's defaults are RunOptions'
    request = RunRequest(0, "f.py", "fn", None, "t")
    defaults = RunOptions()
    assert (request.calls, request.mode, request.let_finish) == (
        defaults.calls,
        defaults.mode,
        defaults.let_finish,
    )
    assert request.capture_limit == parse_size(defaults.capture_limit, floor=0)


def test_the_profile_command_s_flags_are_job_options() -> None:
    argv = ["profile", "model.py::fn"]
    args = _parse(argv)
    for spec in _flagged(JobOptions):
        assert getattr(args, spec.name) == spec.default, spec.name
        if "minimum" in spec.metadata:
            assert _refused([*argv, spec.metadata["flag"], _below(spec)]), spec.name


def test_the_editor_s_run_command_checks_run_options() -> None:
    from torchscope.lsp.jobs import BadArguments
    from torchscope.lsp.run_command import _parse as parse_run

    entry = {"entry": "python train.py"}
    assert parse_run(entry).run == RunOptions()
    for spec in dataclasses.fields(RunOptions):
        if "minimum" in spec.metadata:
            with pytest.raises(BadArguments, match=f"'{spec.name}' must be a number >= "):
                parse_run({**entry, spec.name: spec.metadata["minimum"] - 1})
        if spec.metadata.get("choices"):
            with pytest.raises(BadArguments, match=f"'{spec.name}' must be one of "):
                parse_run({**entry, spec.name: "no-such-choice"})


def test_the_editor_s_compile_mode_is_the_job_option() -> None:
    from torchscope.lsp.compare_command import _mode
    from torchscope.lsp.jobs import BadArguments

    spec = {f.name: f for f in dataclasses.fields(JobOptions)}["compile_mode"]
    assert _mode({}) == spec.default
    for choice in spec.metadata["choices"]:
        assert _mode({"mode": choice}) == choice
    with pytest.raises(BadArguments, match="'mode' must be one of"):
        _mode({"mode": "fastest"})


async def test_the_mcp_tools_parameters_are_the_options() -> None:
    pytest.importorskip("mcp")
    from torchscope.mcp_server import AGENT_MAX_CALLS, build_server, open_service

    service = open_service("python", JobOptions.timeout_s, None)
    try:
        tools = {tool.name: tool for tool in await build_server(service).list_tools()}
    finally:
        await service.close()
    checked = [
        ("profile_function", "steps", JobOptions, "steps"),
        ("profile_function", "warmup", JobOptions, "warmup"),
        ("compare_compile", "mode", JobOptions, "compile_mode"),
        ("profile_in_run", "calls", RunOptions, "calls"),
        ("profile_in_run", "capture", RunOptions, "capture"),
        ("profile_in_run", "mode", RunOptions, "mode"),
    ]
    for tool, parameter, options, name in checked:
        spec = {f.name: f for f in dataclasses.fields(options)}[name]
        schema = tools[tool].input_schema["properties"][parameter]
        assert f"{spec.metadata['help']} (default {spec.default})" in schema["description"]
        if schema.get("default") is not None:
            assert schema["default"] == spec.default, (tool, parameter)
        if "minimum" in spec.metadata:
            assert _limit(schema, "minimum") == spec.metadata["minimum"], (tool, parameter)
            assert _limit(schema, "maximum") == AGENT_MAX_CALLS
        if spec.metadata.get("choices"):
            assert _limit(schema, "enum") == list(spec.metadata["choices"]), (tool, parameter)


def _limit(schema: dict[str, Any], key: str) -> Any:
    """``key`` of a parameter's schema, also under ``anyOf`` (an optional parameter)."""
    if key in schema:
        return schema[key]
    found = [part[key] for part in schema.get("anyOf", []) if key in part]
    return found[0] if found else None
