"""Server settings: from ``initializationOptions.settings``, overridable per command."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from torchscope.analysis.lines import DEFAULT_HOT_SHARE
from torchscope.host.process_tree import default_max_memory, parse_size
from torchscope.host.profile_run import DEFAULT_STEPS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP


class SettingsError(ValueError):
    """A setting has a value of the wrong kind; the message names it and what is allowed."""


def _int(values: Mapping[str, Any], key: str, default: int, minimum: int) -> int:
    value = values.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise SettingsError(f"setting {key!r} must be a number >= {minimum}, got {value!r}")
    return int(value)


def _float(values: Mapping[str, Any], key: str, default: float, minimum: float) -> float:
    value = values.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise SettingsError(f"setting {key!r} must be a number >= {minimum}, got {value!r}")
    return float(value)


def _share(values: Mapping[str, Any], key: str, default: float) -> float:
    """A share: 0.05 or 5 (percent) both mean 5 %."""
    value = _float(values, key, default, 0.0)
    share = value / 100 if value > 1 else value
    if share > 1:
        raise SettingsError(f"setting {key!r} must be a share between 0 and 1 (or a percent)")
    return share


def _memory(values: Mapping[str, Any], key: str, default: int) -> int:
    """A size such as "12G" or a number of bytes; empty means the default."""
    value = values.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(int(value))
    if not isinstance(value, str):
        raise SettingsError(f"setting {key!r} must be a size such as 12G, got {value!r}")
    try:
        return parse_size(value)
    except ValueError as exc:
        raise SettingsError(f"setting {key!r}: {exc}") from None


@dataclass(frozen=True)
class Settings:
    steps: int = DEFAULT_STEPS
    warmup: int = DEFAULT_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    worker_python: str = sys.executable
    trace_dir: Optional[Path] = None
    keep_traces: int = 20
    hot_share: float = DEFAULT_HOT_SHARE
    inlay_hints: bool = True
    with_stack: bool = False
    max_memory: int = field(default_factory=default_max_memory)

    @classmethod
    def from_options(cls, options: Any) -> Settings:
        values = options.get("settings", options) if isinstance(options, Mapping) else {}
        if not isinstance(values, Mapping):
            return cls()
        return cls().updated(values)

    def updated(self, values: Mapping[str, Any]) -> Settings:
        """A copy with the recognised keys of ``values`` applied (unknown keys are ignored).

        Keys are the client's wire names (snake_case, see extension/src/settings.ts).
        """
        trace_dir = values.get("trace_dir")
        python = values.get("worker_python")
        return replace(
            self,
            steps=_int(values, "steps", self.steps, 1),
            warmup=_int(values, "warmup", self.warmup, 0),
            timeout_s=_float(values, "timeout_s", self.timeout_s, 1),
            worker_python=python if isinstance(python, str) and python else self.worker_python,
            trace_dir=Path(trace_dir)
            if isinstance(trace_dir, str) and trace_dir
            else self.trace_dir,
            keep_traces=_int(values, "keep_traces", self.keep_traces, 1),
            hot_share=_share(values, "hot_line_threshold", self.hot_share),
            inlay_hints=bool(values.get("inlay_hints", self.inlay_hints)),
            with_stack=bool(values.get("with_stack", self.with_stack)),
            max_memory=_memory(values, "max_memory", self.max_memory),
        )
