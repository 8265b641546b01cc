"""``torchscope jobs``: this user's running jobs on this host whose agent listens
(``python -m torchscope.agent``, ``TORCHSCOPE_AGENT=1``, ``torchscope.agent.listen()``), with
their pid, rank, age and command (docs/attach.md). ``--json``: one object per job."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from torchscope.cli.common import EXIT_OK
from torchscope.protocol import to_builtins

if TYPE_CHECKING:
    from torchscope.cli.common import Commands


def add_parser(commands: Commands) -> argparse.ArgumentParser:
    jobs = commands.add_parser(
        "jobs",
        help="list the running jobs torchscope attach can profile",
        description="List this user's processes on this host whose torchscope agent listens.",
    )
    jobs.add_argument("--json", action="store_true", help="one JSON object per job")
    return jobs


def run(args: argparse.Namespace) -> int:
    import asyncio

    from torchscope.host.attach_run import job_age, job_command, list_jobs

    found = asyncio.run(list_jobs())
    if args.json:
        for info in found:
            data = to_builtins(info)
            data["age_s"] = round(job_age(info), 1)
            print(json.dumps(data, ensure_ascii=False))
        return EXIT_OK
    if not found:
        print(
            "no job with a torchscope agent — start one with `python -m torchscope.agent "
            "train.py ARGS…` or TORCHSCOPE_AGENT=1 (docs/attach.md)"
        )
        return EXIT_OK
    print(f"{'PID':>8}  {'RANK':>5}  {'AGE':>8}  COMMAND")
    for info in found:
        rank = "-" if info.rank is None else f"{info.rank}/{info.world_size or '?'}"
        age = _age(job_age(info))
        print(f"{info.pid:>8}  {rank:>5}  {age:>8}  {job_command(info)}")
    return EXIT_OK


def _age(seconds: float) -> str:
    """``42 s``, ``7 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
