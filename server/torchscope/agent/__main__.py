"""``python -m torchscope.agent train.py ARGS…`` (or ``-m module ARGS…``): run the program as
``python`` would, with the agent listening (``torchscope attach PID``)."""

from __future__ import annotations

import os
import runpy
import sys

from torchscope.agent import listen

USAGE = "usage: python -m torchscope.agent SCRIPT.py ARGS… | -m MODULE ARGS…"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    listen()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
