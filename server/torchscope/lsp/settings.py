"""Server settings: from ``initializationOptions.settings``, overridable per command.

The settings that reach a job are one ``JobOptions`` (``Settings.job``), filled with one call;
the others (interpreter, its environment and whether it starts before the first job, trace
folder and how long its traces stay, hot-line threshold, inlay hints) stay in the editor.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from torchscope.analysis import DEFAULT_HOT_SHARE
from torchscope.host.env_file import EnvFileError, environment
from torchscope.host.trace_store import Retention
from torchscope.protocol import JobOptions


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


def _positive(values: Mapping[str, Any], key: str, default: Optional[float]) -> Optional[float]:
    value = values.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SettingsError(f"setting {key!r} must be a number > 0, got {value!r}")
    return float(value)


#: ``torchscope.prestart``: start the worker (import torch, the CPU profiler's warm-up) when
#: the editor connects, or at the first job.
PRESTART_CHOICES = ("auto", "off")


def _choice(values: Mapping[str, Any], key: str, default: str, choices: tuple[str, ...]) -> str:
    value = values.get(key, default)
    if value not in choices:
        raise SettingsError(f"setting {key!r} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _env(values: Mapping[str, Any], key: str, default: Mapping[str, str]) -> dict[str, str]:
    """A map of environment variables: names to text (a number is written as text)."""
    value = values.get(key)
    if value is None:
        return dict(default)
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and k and isinstance(v, (str, int, float)) and not isinstance(v, bool)
        for k, v in value.items()
    ):
        raise SettingsError(f"setting {key!r} must map variable names to text, got {value!r}")
    return {k: str(v) for k, v in value.items()}


def _share(values: Mapping[str, Any], key: str, default: float) -> float:
    """A share: 0.05 or 5 (percent) both mean 5 %."""
    value = _float(values, key, default, 0.0)
    share = value / 100 if value > 1 else value
    if share > 1:
        raise SettingsError(f"setting {key!r} must be a share between 0 and 1 (or a percent)")
    return share


@dataclass(frozen=True)
class Settings:
    job: JobOptions = field(default_factory=JobOptions)
    worker_python: str = sys.executable
    trace_dir: Optional[Path] = None
    keep_traces: int = 20  # folders of rank traces and sweep charts kept
    keep_traces_days: Optional[float] = None  # None: TORCHSCOPE_TRACE_KEEP_DAYS, else 7
    keep_traces_gb: Optional[float] = None  # None: TORCHSCOPE_TRACE_KEEP_GB, else 2
    hot_share: float = DEFAULT_HOT_SHARE
    inlay_hints: bool = True
    prestart: str = "auto"  # PRESTART_CHOICES
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for the worker (``torchscope.env``), over ``env_file``'s."""
    env_file: Optional[str] = None
    """An env file for the worker (``torchscope.envFile``, else ``python.envFile``)."""

    @property
    def retention(self) -> Retention:
        """The trace folder's retention: these settings where set, else the environment's."""
        chosen = Retention.from_env()
        return Retention(self.keep_traces_days or chosen.days, self.keep_traces_gb or chosen.gb)

    @classmethod
    def from_options(cls, options: Any) -> Settings:
        values = options.get("settings", options) if isinstance(options, Mapping) else {}
        if not isinstance(values, Mapping):
            return cls()
        return cls().updated(values)

    def updated(self, values: Mapping[str, Any]) -> Settings:
        """A copy with the recognised keys of ``values`` applied (unknown keys are ignored).

        Keys are the client's wire names (snake_case, see extension/src/settings.ts); the job
        options' names are ``JobOptions``' field names.
        """
        try:
            job = self.job.updated(values)
        except ValueError as exc:
            raise SettingsError(str(exc).replace("option", "setting", 1)) from None
        trace_dir = values.get("trace_dir")
        python = values.get("worker_python")
        return replace(
            self,
            job=job,
            worker_python=python if isinstance(python, str) and python else self.worker_python,
            trace_dir=Path(trace_dir)
            if isinstance(trace_dir, str) and trace_dir
            else self.trace_dir,
            keep_traces=_int(values, "keep_traces", self.keep_traces, 1),
            keep_traces_days=_positive(values, "keep_traces_days", self.keep_traces_days),
            keep_traces_gb=_positive(values, "keep_traces_gb", self.keep_traces_gb),
            hot_share=_share(values, "hot_line_threshold", self.hot_share),
            inlay_hints=bool(values.get("inlay_hints", self.inlay_hints)),
            prestart=_choice(values, "prestart", self.prestart, PRESTART_CHOICES),
            env=_env(values, "env", self.env),
            env_file=_text(values, "env_file", self.env_file),
        )

    def worker_env(self, root: Optional[Path]) -> dict[str, str]:
        """``env_file``'s variables (relative to ``root``) with ``env`` over them;
        ``SettingsError`` says what is wrong with the file."""
        try:
            return environment(self.env, self.env_file, root)
        except EnvFileError as exc:
            raise SettingsError(str(exc)) from None


def _text(values: Mapping[str, Any], key: str, default: Optional[str]) -> Optional[str]:
    """A path or other text; "" clears it."""
    value = values.get(key, default)
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"setting {key!r} must be text, got {value!r}")
    return value or None
