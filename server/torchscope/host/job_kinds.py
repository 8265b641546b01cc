"""The host's job kinds by name: every ``HostJob`` instance in a ``host/*_run.py`` module.

A new kind's ``host/<kind>_run.py`` is found here, so the CLI (``cli/common.py``) runs it
from its ``protocol`` flag without an edit per kind. Imported only when a job runs: the host
modules import the analysis.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from torchscope.host.profile_run import HostJob


@cache
def host_kinds() -> dict[str, HostJob[Any, Any]]:
    """Job kind (``protocol.JOB_KINDS``' key) → its ``HostJob``."""
    import torchscope.host as host

    kinds: dict[str, HostJob[Any, Any]] = {}
    for info in sorted(pkgutil.iter_modules(host.__path__), key=lambda m: m.name):
        if info.name.endswith("_run"):
            module = importlib.import_module(f"{host.__name__}.{info.name}")
            for value in vars(module).values():
                if isinstance(value, HostJob):
                    kinds[value.kind] = value
    return kinds
