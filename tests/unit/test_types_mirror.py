"""The extension's result types (extension/src/types.ts) name the same JSON fields as the
Python types that produce them. Each result interface names its Python class in the comment
above it (``/** analysis.results.Device */``); the keys come from ``protocol.json_keys``, the
schema of the one codec (``to_builtins``), so a field renamed, added, dropped or inlined on one
side fails here, with no second list of names to keep in step."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from torchscope.protocol import json_keys

TYPES_TS = Path(__file__).resolve().parents[2] / "extension" / "src" / "types.ts"
_INTERFACE = re.compile(
    r"/\*\* (analysis\.[\w.]+)[^\n]*\*/\nexport interface (\w+) \{\n(.*?)\n\}", re.S
)
_FIELD = re.compile(r"^  (\w+)\??:", re.M)


def _mirrors() -> dict[str, tuple[str, set[str]]]:
    """Interface → (the Python class it mirrors, the fields types.ts declares)."""
    text = TYPES_TS.read_text(encoding="utf-8")
    return {name: (path, set(_FIELD.findall(body))) for path, name, body in _INTERFACE.findall(text)}


def _python_class(path: str) -> type:
    module, _, name = f"torchscope.{path}".rpartition(".")
    cls: type = getattr(importlib.import_module(module), name)
    return cls


def test_every_result_interface_names_its_python_type() -> None:
    assert len(_mirrors()) >= 20


@pytest.mark.parametrize("name", sorted(_mirrors()))
def test_types_ts_mirrors_the_python_model(name: str) -> None:
    path, ts = _mirrors()[name]
    py = set(json_keys(_python_class(path)))
    assert ts == py, (
        f"{name} ({path}): only in types.ts {sorted(ts - py)}, "
        f"only in the JSON of the Python type {sorted(py - ts)}"
    )
