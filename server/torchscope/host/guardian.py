"""A tiny watchdog that outlives its host: when the host dies, it kills the worker's processes.

The worker dies with its host by itself (``PR_SET_PDEATHSIG``), but processes the user's code
started do not: the parent-death signal is not inherited, and a process in its own session
escapes the process group. So next to each worker the host starts this guardian (no torch, no
msgpack; ~20 MB) holding the read end of a pipe whose write end only the host has. When the
host exits — cleanly or by SIGKILL — the pipe reads EOF and the guardian kills every process
carrying the worker's marker, then exits.

Run as ``python -c <GUARDIAN_BOOTSTRAP> <package parent> <fd> <marker>``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

GUARDIAN_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv[1]); from torchscope.host.guardian import main; main()"
)


def main() -> None:
    fd, marker = int(sys.argv[2]), sys.argv[3]
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # only the pipe's EOF ends the watch
    while True:
        try:
            if not os.read(fd, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    from torchscope.host.process_tree import kill_marked

    asyncio.run(kill_marked(marker, grace_s=0.2))


if __name__ == "__main__":
    main()
