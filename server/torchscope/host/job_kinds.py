"""The host's job kinds by name, an explicit list (as every family of plugins is): a new
kind's ``host/<kind>_run.py`` and its line here, so the CLI (``cli/common.py``) runs it from its
``protocol`` flag. Imported only when a job runs: the host modules import the analysis.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from torchscope.host.profile_run import HostJob


@cache
def host_kinds() -> dict[str, HostJob[Any, Any]]:
    """Job kind (``protocol.JOB_KINDS``' key) → its ``HostJob``."""
    from torchscope.host.compare_run import COMPARE
    from torchscope.host.profile_run import PROFILE

    return {kind.kind: kind for kind in (PROFILE, COMPARE)}
