"""Cross-build the native trace reader (``torchscope.ingest._native``) for another platform on
this Linux machine, with ``ziglang`` (a C compiler from the package index that carries every
target's libc headers), with the headers of the CPythons found here (the same on every
64-bit platform but for ``pyconfig.h``'s build options, which the reader does not read).

    python scripts/release/cross_native.py TARGET OUT_DIR [ZIG_PYTHON]

TARGET is a VS Code target: linux-x64, linux-arm64 (glibc 2.17, manylinux2014), darwin-arm64
(macOS 11), darwin-x64 (macOS 10.13). ZIG_PYTHON is an interpreter with ``ziglang``
(default: ``scripts/release/ensure-tools.sh``'s). The interpreters and sources are those of
``scripts/vscode/build_native.py`` (one list).

CPython 3.11 and later share one build against the stable ABI (``Py_LIMITED_API=0x030B0000``,
``_native.abi3.so``, compiled with the oldest such CPython's headers); 3.9 and 3.10 get one
build each, named by the suffix they look for (``_native.cpython-39-aarch64-linux-gnu.so``,
``_native.cpython-310-darwin.so``): the limited API has no buffer protocol before 3.11
(docs/design-notes.md).
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
#: The oldest CPython the abi3 build serves (and whose headers compile it).
ABI3_FLOOR = (3, 11)
FLAGS = ["-O3", "-DNDEBUG", "-fwrapv", "-fno-strict-aliasing", "-g0", "-s", "-shared", "-fPIC"]


def default_zig_python() -> str:
    tools = os.environ.get(
        "TORCHSCOPE_RELEASE_TOOLS", os.path.expanduser("~/.cache/torchscope-release")
    )
    return os.path.join(tools, "venv", "bin", "python")


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def suffix(target: str, version: str) -> str:
    """The suffix the build for CPython ``version`` ("3.10") is named by on ``target``: its
    own EXT_SUFFIX, or ``.abi3.so`` from the abi3 floor on."""
    if _version(version) >= ABI3_FLOOR:
        return ".abi3.so"
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
    if _version(version) >= ABI3_FLOOR:
        extra.append(f"-DPy_LIMITED_API=0x{ABI3_FLOOR[0]:02X}{ABI3_FLOOR[1]:02X}0000")
    target_file = out / f"_native{suffix(target, version)}"
    cmd = [zig, "-m", "ziglang", "cc", "-target", TARGETS[target][0], *FLAGS, *extra,
           f"-I{include}", *files, "-o", str(target_file)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"cross-native: {target} {version}: failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return version


def plan() -> list[list[str]]:
    """The interpreters to build with: each one below the abi3 floor, and the oldest at or
    above it (its headers make the abi3 build)."""
    chosen, abi3 = [], False
    for candidates in build_native.interpreters():
        found = build_native.probe(candidates)
        if found is None:
            continue
        if _version(found[4]) < ABI3_FLOOR:
            chosen.append([found[0]])
        elif not abi3:
            chosen.append([found[0]])
            abi3 = True
    return chosen


def build(target: str, out: Path, zig: str | None = None) -> list[str]:
    """Build ``target``'s reader for every CPython here into ``out``; the versions built."""
    out.mkdir(parents=True, exist_ok=True)
    zig = zig or default_zig_python()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = pool.map(lambda c: build_one(target, c, out, zig), plan())
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
