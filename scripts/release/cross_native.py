"""Cross-build the native trace reader (``torchscope.ingest._native``) for another platform on
this Linux machine, with ``ziglang`` (a C compiler from the package index that carries every
target's libc headers), once per CPython found here (3.9 … 3.13: their headers are the same
on every 64-bit platform but for ``pyconfig.h``'s build options, which the reader does not
read).

    python scripts/release/cross_native.py TARGET OUT_DIR [ZIG_PYTHON]

TARGET is a VS Code target: linux-x64, linux-arm64 (glibc 2.17, manylinux2014), darwin-arm64
(macOS 11), darwin-x64 (macOS 10.13). ZIG_PYTHON is an interpreter with ``ziglang``
(default: ``scripts/release/ensure-tools.sh``'s). Each build is named by the suffix the
target's CPython looks for (``_native.cpython-311-aarch64-linux-gnu.so``,
``_native.cpython-311-darwin.so``). The interpreters and sources are those of
``scripts/vscode/build_native.py`` (one list).

Not the stable ABI (abi3): the reader uses CPython's non-limited API (static type objects,
``Py_buffer`` before 3.11, ``PyTuple_SET_ITEM`` and other macros); docs/design-notes.md says
what a conversion would take.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vscode"))
import build_native

#: VS Code target -> (zig target, EXT_SUFFIX platform part, wheel platform tag).
TARGETS: dict[str, tuple[str, str, str]] = {
    "linux-x64": (
        "x86_64-linux-gnu.2.17",
        "x86_64-linux-gnu",
        "manylinux_2_17_x86_64.manylinux2014_x86_64",
    ),
    "linux-arm64": (
        "aarch64-linux-gnu.2.17",
        "aarch64-linux-gnu",
        "manylinux_2_17_aarch64.manylinux2014_aarch64",
    ),
    "darwin-arm64": ("aarch64-macos.11.0", "darwin", "macosx_11_0_arm64"),
    "darwin-x64": ("x86_64-macos.10.13", "darwin", "macosx_10_13_x86_64"),
}
FLAGS = ["-O3", "-DNDEBUG", "-fwrapv", "-fno-strict-aliasing", "-g0", "-s", "-shared", "-fPIC"]


def default_zig_python() -> str:
    tools = os.environ.get(
        "TORCHSCOPE_RELEASE_TOOLS", os.path.expanduser("~/.cache/torchscope-release")
    )
    return os.path.join(tools, "venv", "bin", "python")


def suffix(target: str, version: str) -> str:
    """The EXT_SUFFIX the target's CPython ``version`` ("3.11") imports."""
    return f".cpython-{version.replace('.', '')}-{TARGETS[target][1]}.so"


def build_one(target: str, candidates: list[str], out: Path, zig: str) -> str | None:
    """Build for the version of the first of ``candidates`` that runs; that version or None."""
    found = build_native.probe(candidates)
    if found is None:
        return None
    _, include, _, _, version = found
    if not (Path(include) / "Python.h").exists():
        return None
    files = [f for f in build_native.sources() if f.endswith(".c")]
    extra = ["-undefined", "dynamic_lookup"] if target.startswith("darwin") else []
    target_file = out / f"_native{suffix(target, version)}"
    cmd = [zig, "-m", "ziglang", "cc", "-target", TARGETS[target][0], *FLAGS, *extra,
           f"-I{include}", *files, "-o", str(target_file)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"cross-native: {target} {version}: failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return version


def build(target: str, out: Path, zig: str | None = None) -> list[str]:
    """Build ``target``'s reader for every CPython here into ``out``; the versions built."""
    out.mkdir(parents=True, exist_ok=True)
    zig = zig or default_zig_python()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = pool.map(lambda c: build_one(target, c, out, zig), build_native.interpreters())
        return sorted((v for v in done if v is not None), key=lambda v: int(v.split(".")[1]))


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in TARGETS:
        print(__doc__, file=sys.stderr)
        return 2
    built = build(argv[0], Path(argv[1]), argv[2] if len(argv) == 3 else None)
    if not built:
        print(f"cross-native: {argv[0]}: nothing built", file=sys.stderr)
        return 1
    print(f"cross-native: {argv[0]}: built for CPython {', '.join(built)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
