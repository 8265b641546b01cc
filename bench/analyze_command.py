"""How long does ``torchscope analyze TRACE`` take as users run it, and how much memory?

Each run is a fresh process, timed from its start to its exit with its own peak RSS
(``os.wait4`` on the child), stdout to ``/dev/null``; the kinds run interleaved in rounds
(``--repeat``), so each round sees the same machine load:

- **floor**: ``python -c`` doing ``gzip.decompress`` + ``json.loads`` of the file: no reader of
  a Kineto trace can do less;
- **torchscope**: the console script, ``.venv/bin/torchscope analyze TRACE``;
- **no-native**: the same with ``TORCHSCOPE_NO_NATIVE=1`` (the Python twins of the C stages);
  its stdout must equal the native run's;
- **before**: ``python -m torchscope analyze TRACE`` of the revision ``--before`` (default
  ``975392d``, the commit before the ``cli/`` package), from a temporary ``git worktree`` with
  its C extension built in place (removed at the end);
- **HTA**: HolisticTraceAnalysis load + ``get_temporal_breakdown()`` (``analyze_speed.py``'s
  child; ``pip install -r bench/requirements.txt``; skipped with a note when not installed).

Prints medians, min–max over the rounds and the ratios with their targets (run_all.py prints
the targets in its table too): HTA ÷ torchscope ≥ 10, torchscope ÷ before ≤ 1 (wall time and
peak RSS). A child's ``ru_maxrss`` starts from this process's own peak (Linux carries it
across fork and exec), so this process stays small: it prints its own peak at the end.

    .venv/bin/python bench/analyze_command.py [TRACE] [--repeat 5] [--before REV]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, NamedTuple, Optional, Union

sys.path.insert(0, str(Path(__file__).resolve().parent))

import analyze_speed

REPO = analyze_speed.REPO
DEFAULT_BEFORE = "975392d"
TARGET_VS_HTA = analyze_speed.TARGET_VS_HTA
TARGET_VS_BEFORE = 1.0
TARGET_MEMORY_VS_BEFORE = 1.0
Row = tuple[str, float, str, bool]
Command = tuple[list[str], dict[str, str]]  # argv, environment

_FLOOR = """
import gzip, json, sys
data = open(sys.argv[1], "rb").read()
json.loads(gzip.decompress(data) if data[:2] == b"\\x1f\\x8b" else data)
"""


class Sample(NamedTuple):
    wall_s: float
    peak_mib: float


def run_once(
    command: list[str],
    env: Optional[dict[str, str]] = None,
    stdout: Union[int, IO[Any]] = subprocess.DEVNULL,
) -> Sample:
    """One fresh process: its wall time and its own peak RSS (``ru_maxrss`` from ``wait4``)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=err, env=env, cwd=REPO
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait
        if proc.returncode != 0:
            err.seek(0)
            message = err.read().decode(errors="replace")[-3000:]
            raise SystemExit(f"{' '.join(command)} failed (exit {proc.returncode}):\n{message}")
    return Sample(wall, usage.ru_maxrss / 1024)  # KiB on Linux


def _stdout_of(command: list[str], env: dict[str, str]) -> str:
    with tempfile.TemporaryFile() as out:
        run_once(command, env, out)
        out.seek(0)
        return out.read().decode()


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCHSCOPE_NO_NATIVE")}
    env.update(extra)
    return env


@contextmanager
def before_tree(rev: str) -> Iterator[Path]:
    """A temporary ``git worktree`` of ``rev`` with its C extension built in place."""
    folder = Path(tempfile.mkdtemp(prefix="torchscope-before-"))
    tree = folder / "tree"
    git = ["git", "-C", str(REPO)]
    subprocess.run([*git, "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    try:
        print(f"building {rev}'s C extension in {tree} …", flush=True)
        build = subprocess.run(
            [sys.executable, "-c", "from setuptools import setup; setup()", "build_ext", "-i"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        )
        if not list((tree / "server" / "torchscope").glob("*/_native*.so")):  # analysis/ or ingest/
            raise SystemExit(f"building {rev}'s _native failed:\n{build.stderr[-3000:]}")
        analyze_speed.compile_bytecode(tree / "server" / "torchscope")
        yield tree
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _check_before(tree: Path, env: dict[str, str]) -> None:
    """``python -m torchscope`` there runs that tree's ``torchscope.cli.main`` (the console
    script's entry point), with its C extension."""
    main = (tree / "server" / "torchscope" / "__main__.py").read_text()
    if "from torchscope.cli import main" not in main:
        raise SystemExit(f"{tree}: python -m torchscope does not run torchscope.cli.main")
    # the accel module's home moved from analysis/ to ingest/ (issue 24): probe either
    probe = (
        "import importlib.util as u; n = 'torchscope.ingest.accel'; "
        "n = n if u.find_spec(n) else 'torchscope.analysis.accel'; "
        "import importlib; a = importlib.import_module(n); print(a.__file__, a.native is not None)"
    )
    got = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    if not got[0].startswith(str(tree)) or got[1] != "True":
        raise SystemExit(f"PYTHONPATH={env['PYTHONPATH']} imports {got} (want {tree}, native)")


def commands(trace: Path, before: Optional[Path], hta: bool) -> dict[str, Command]:
    script = Path(sys.executable).parent / "torchscope"
    if not script.is_file():
        raise SystemExit(f"no console script at {script}: pip install -e . in this checkout")
    kinds: dict[str, Command] = {
        "floor": ([sys.executable, "-c", _FLOOR, str(trace)], _env()),
        "torchscope": ([str(script), "analyze", str(trace)], _env()),
        "no-native": ([str(script), "analyze", str(trace)], _env(TORCHSCOPE_NO_NATIVE="1")),
    }
    if before is not None:
        env = _env(PYTHONPATH=str(before / "server"))
        kinds["before"] = ([sys.executable, "-m", "torchscope", "analyze", str(trace)], env)
    if hta:
        child = [sys.executable, analyze_speed.__file__, "--child", "hta", str(trace)]
        kinds["hta"] = (child, _env())
    return kinds


def measure(trace: Path, repeat: int, rev: Optional[str], hta: bool) -> dict[str, list[Sample]]:
    """Every kind ``repeat`` times, interleaved; also prints whether the outputs agree."""
    if hta and importlib.util.find_spec("hta") is None:
        print("HTA is not installed (pip install -r bench/requirements.txt): skipped")
        hta = False
    analyze_speed.compile_bytecode()
    with before_tree(rev) if rev else _no_tree() as tree:
        kinds = commands(trace, tree, hta)
        if tree is not None:
            _check_before(tree, kinds["before"][1])
        native = _stdout_of(*kinds["torchscope"])
        same = _stdout_of(*kinds["no-native"]) == native
        print(f"no-native stdout == native stdout: {'yes' if same else 'NO'}")
        if tree is not None:
            same = _stdout_of(*kinds["before"]) == native
            print(f"before ({rev}) stdout == torchscope stdout: {'yes' if same else 'NO'}")
        runs: dict[str, list[Sample]] = {kind: [] for kind in kinds}
        for round_ in range(repeat):
            for kind, (command, env) in kinds.items():
                runs[kind].append(run_once(command, env))
            print(f"round {round_ + 1}/{repeat} done", flush=True)
    return runs


@contextmanager
def _no_tree() -> Iterator[None]:
    yield None


def _median(samples: list[Sample], key: str) -> float:
    return float(statistics.median(getattr(s, key) for s in samples))


def _paired(runs: dict[str, list[Sample]], top: str, bottom: str, key: str) -> list[float]:
    """``top / bottom`` round by round (each round saw one machine load)."""
    return [getattr(a, key) / getattr(b, key) for a, b in zip(runs[top], runs[bottom])]


def target_rows(runs: dict[str, list[Sample]]) -> list[Row]:
    """The ratios with a target, for this table and run_all.py's."""
    rows: list[Row] = []
    wall = {kind: _median(samples, "wall_s") for kind, samples in runs.items()}
    if "hta" in runs:
        ratio = wall["hta"] / wall["torchscope"]
        label = "command: HTA / torchscope analyze (wall)"
        rows.append((label, ratio, f"≥ {TARGET_VS_HTA:g}", ratio >= TARGET_VS_HTA))
    if "before" in runs:
        ratio = wall["torchscope"] / wall["before"]
        label = "command: torchscope / before (wall)"
        rows.append((label, ratio, f"≤ {TARGET_VS_BEFORE:g}", ratio <= TARGET_VS_BEFORE))
        ratio = _median(runs["torchscope"], "peak_mib") / _median(runs["before"], "peak_mib")
        label, wanted = "command: peak RSS torchscope / before", TARGET_MEMORY_VS_BEFORE
        rows.append((label, ratio, f"≤ {wanted:g}", ratio <= wanted))
    return rows


def report(runs: dict[str, list[Sample]]) -> None:
    print(f"\n{'':12}{'wall s':>9}{'min–max':>15}{'peak MiB':>10}{'min–max':>12}")
    for kind, samples in runs.items():
        walls, peaks = [s.wall_s for s in samples], [s.peak_mib for s in samples]
        print(
            f"{kind:12}{_median(samples, 'wall_s'):9.3f}{min(walls):8.3f}–{max(walls):.3f}"
            f"{_median(samples, 'peak_mib'):10.0f}{min(peaks):7.0f}–{max(peaks):.0f}"
        )
    print()
    for label, value, wanted, ok in target_rows(runs):
        print(f"{label}: {value:.2f}×  (target {wanted})  {'ok' if ok else 'MISSED'}")
    if "before" in runs:
        paired = _paired(runs, "torchscope", "before", "wall_s")
        print(f"  torchscope / before round by round: {' '.join(f'{x:.2f}' for x in paired)}")
    for label, top, bottom in (
        ("no-native / native (wall)", "no-native", "torchscope"),
        ("torchscope / floor (wall)", "torchscope", "floor"),
    ):
        ratio = _median(runs[top], "wall_s") / _median(runs[bottom], "wall_s")
        paired = _paired(runs, top, bottom, "wall_s")
        print(f"{label}: {ratio:.2f}×  (rounds {min(paired):.2f}–{max(paired):.2f})")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this process's peak RSS, the floor of every child's: {own:.0f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trace", nargs="?", type=Path, default=analyze_speed.DEFAULT_TRACE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git revision ('' to skip)")
    parser.add_argument("--skip-hta", action="store_true")
    args = parser.parse_args()
    trace = args.trace.resolve()
    if not trace.is_file():
        raise SystemExit(f"no trace at {trace}")
    size = trace.stat().st_size / 2**20
    print(f"trace: {trace} ({size:.1f} MiB), {args.repeat} rounds, one fresh process per run")
    report(measure(trace, args.repeat, args.before or None, not args.skip_hta))


if __name__ == "__main__":
    main()
