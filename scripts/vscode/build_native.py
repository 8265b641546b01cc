"""Build the C part (``torchscope.ingest._native``) once per CPython found on this machine,
into a folder of the bundle: the ``.vsix`` then carries the fast reader for every supported
Python a user may pick (each build is named by its interpreter's ``EXT_SUFFIX``, so Python
imports the one that matches it).

    python scripts/vscode/build_native.py OUT_DIR

The sources and headers are pyproject.toml's ``ext-modules`` entry (one list). Interpreters:
``$TORCHSCOPE_BUNDLE_PYTHONS`` (space-separated), else ``python3.9`` … ``python3.14`` on
PATH and pyenv's. A version whose headers are missing is skipped with a note; none built
at all is an error. Compiled with each interpreter's own flags (``sysconfig``), as pip
would.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
VERSIONS = [f"3.{minor}" for minor in range(9, 15)]
_PROBE = (
    "import sys, sysconfig; v = sysconfig.get_config_var; "
    "print(sysconfig.get_paths()['include']); print(v('EXT_SUFFIX')); "
    "print(v('CFLAGS') or ''); print('%d.%d' % sys.version_info[:2])"
)


def sources() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (ext,) = config["tool"]["setuptools"]["ext-modules"]
    return [str(REPO / s) for s in ext["sources"]]


def interpreters() -> list[list[str]]:
    """Per version, the interpreters that may be it (the first that runs is built for)."""
    named = os.environ.get("TORCHSCOPE_BUNDLE_PYTHONS", "").split()
    if named:
        return [[p] for p in named]
    pyenv = os.path.expanduser("~/.pyenv/versions")
    return [
        [shutil.which(f"python{v}") or "", *sorted(glob.glob(f"{pyenv}/{v}.*/bin/python3"))]
        for v in VERSIONS
    ]


def probe(candidates: list[str]) -> tuple[str, str, str, str, str] | None:
    """The first of ``candidates`` that runs: (its path, include folder, EXT_SUFFIX, CFLAGS,
    version); None when none does."""
    for python in filter(None, candidates):
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            include, suffix, cflags, version = done.stdout.splitlines()[:4]
            return python, include, suffix, cflags, version
    return None


def build(candidates: list[str], out: Path, files: list[str]) -> str | None:
    """Build for the first of ``candidates`` that runs; the version built, or None."""
    found = probe(candidates)
    if found is None:
        return None
    python, include, suffix, cflags, version = found
    if not (Path(include) / "Python.h").exists():
        print(f"build-native: {python} ({version}): no Python.h; skipped", file=sys.stderr)
        return None
    target = out / f"_native{suffix}"
    cc = os.environ.get("CC", "cc")
    flags = [f for f in cflags.split() if f.startswith(("-O", "-f", "-W", "-D"))]
    cmd = [cc, *flags, "-fPIC", "-shared", f"-I{include}", *files, "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"build-native: {version}: the build failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return version


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    files = [f for f in sources() if f.endswith(".c")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda c: build(c, out, files), interpreters()))
    built = [v for v in results if v is not None]
    if not built:
        print("build-native: no CPython could be built for", file=sys.stderr)
        return 1
    print(f"build-native: built for CPython {', '.join(sorted(set(built)))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
