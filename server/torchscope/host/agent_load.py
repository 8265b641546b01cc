"""Load the agent into a job started without it: CPython >= 3.14's ``sys.remote_exec`` (PEP
768) runs a small script in process ``pid`` at its next safe point; no debugger, no other
injection. Both interpreters must be CPython >= 3.14 of the same minor version, and the kernel
must let this process trace the job (same user; Yama's ``ptrace_scope`` 0, or
``CAP_SYS_PTRACE``). Where it refuses, one message says why and names both fixes."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from torchscope.host.profile_run import ProfileFailure

#: How long the agent may take to open its socket once the script is queued (the job runs it
#: at its next bytecode safe point; a job in a long C call takes longer).
LOAD_TIMEOUT_S = 10.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
START = (
    "import sys\n"
    "sys.path.append({parent!r}) if {parent!r} not in sys.path else None\n"
    "import torchscope.agent\n"
    "torchscope.agent.listen()\n"
)


def can_load() -> bool:
    """Can this interpreter load the agent into another process?"""
    return hasattr(sys, "remote_exec")


def _refused(pid: int, exc: OSError) -> ProfileFailure:
    scope = ""
    with contextlib.suppress(OSError):
        scope = Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    why = f" (Yama ptrace_scope is {scope})" if scope else ""
    return ProfileFailure(
        "ptrace",
        f"the kernel refused to let torchscope load its agent into process {pid}{why}: {exc} — "
        "either start the job with the agent (python -m torchscope.agent train.py ARGS…, or "
        "TORCHSCOPE_AGENT=1), or allow tracing your own processes: `sudo sysctl "
        "kernel.yama.ptrace_scope=0`, or give torchscope CAP_SYS_PTRACE",
    )


def load_agent(pid: int, socket: Path) -> None:
    """Start the agent in ``pid`` and wait for its ``socket``; ``ProfileFailure`` says why
    not."""
    remote_exec = getattr(sys, "remote_exec", None)
    if remote_exec is None:
        raise ProfileFailure("no-agent", f"no agent in process {pid}")
    handle, script = tempfile.mkstemp(prefix="torchscope-agent-", suffix=".py")
    with os.fdopen(handle, "w") as out:
        out.write(START.format(parent=_PACKAGE_PARENT))
    try:
        remote_exec(pid, script)
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while not socket.exists():
            if time.monotonic() > deadline:
                raise ProfileFailure(
                    "no-agent",
                    f"process {pid} did not start the agent within {LOAD_TIMEOUT_S:g} s (is it "
                    "CPython of this version, and running Python code now?)",
                )
            time.sleep(0.05)
    except PermissionError as exc:
        raise _refused(pid, exc) from None
    except (OSError, RuntimeError) as exc:
        raise ProfileFailure("no-agent", f"loading the agent into process {pid}: {exc}") from None
    finally:
        os.unlink(script)
