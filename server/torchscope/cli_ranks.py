"""``torchscope analyze DIR``: the cross-rank view of a folder of per-rank traces."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from torchscope.cli_open import open_in_perfetto


def analyze_folder_command(args: argparse.Namespace) -> int:
    """Print the cross-rank view of the folder ``args.trace`` (text or ``--json``); with
    ``--open``, open the slowest rank's trace. 0 on success, 1 when a trace cannot be read."""
    from torchscope.analysis import TraceError, render_report
    from torchscope.analysis.ranks import analyze_folder, render_ranks

    folder: Path = args.trace
    as_json: bool = args.json

    try:
        view = analyze_folder(folder)
    except TraceError as exc:
        print(f"torchscope: {exc}", file=sys.stderr)
        return 1
    if as_json:
        data = view.to_dict()
        data["trace_path"] = str(folder)
        print(json.dumps(data, ensure_ascii=False))
    else:
        print(render_ranks(view))
        print()
        print(f"== rank {view.slowest} (the slowest) ==")
        print(render_report(view.reports[view.slowest]))
        for r in view.ranks:
            print(f"trace (rank {r.rank}): {r.trace_path}")
    if args.open:  # the slowest rank's trace; the link to stderr with --json
        slowest = Path(view.ranks[[r.rank for r in view.ranks].index(view.slowest)].trace_path)
        out = sys.stderr if as_json else sys.stdout
        return 0 if open_in_perfetto(slowest, args.perfetto_origin, args.open_timeout, out) else 1
    return 0
