"""Build torchscope's Python packages into DIST: the sdist, the pure-Python ``py3-none-any``
wheel, and one platform wheel per (target, CPython) from the readers that
``cross_native.py`` built under NATIVE_ROOT/<target>/.

    python scripts/release/wheels.py DIST [NATIVE_ROOT [TOOLS_PYTHON]]

The pure wheel is built by pip (setuptools) from a copy of the source tree without the C
part; a platform wheel is that wheel plus one ``_native`` build, its ``WHEEL`` tags and
``RECORD`` rewritten (what ``wheel pack`` does, in a few lines with zipfile). The sdist is
built by ``python -m build --sdist`` with TOOLS_PYTHON (``ensure-tools.sh``'s); without it
(or with no NATIVE_ROOT) that part is skipped with a note.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cross_native

REPO = Path(__file__).resolve().parents[2]
_SKIP = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build", "*.pyc")
_EXT_MODULES = re.compile(r"^ext-modules = \[.*?^\]\n", re.S | re.M)


def source_tree(into: Path, *, pure: bool) -> Path:
    """What a build reads, copied (symlinks kept) so the checkout stays clean; ``pure`` drops
    the C part from the copy's pyproject.toml."""
    shutil.copytree(REPO / "server", into / "server", symlinks=True, ignore=_SKIP)
    shutil.copytree(REPO / "docs", into / "docs", ignore=shutil.ignore_patterns("images"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        shutil.copy(REPO / name, into / name)
    if pure:
        config = into / "pyproject.toml"
        config.write_text(_EXT_MODULES.sub("", config.read_text()))
    return into


def pure_wheel(dist: Path) -> Path:
    """Build the ``py3-none-any`` wheel into ``dist``."""
    with tempfile.TemporaryDirectory() as tmp:
        source = source_tree(Path(tmp) / "src", pure=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
             "-w", str(dist), str(source)],
            check=True, capture_output=True,
        )  # fmt: skip
    [wheel] = dist.glob("torchscope-*-py3-none-any.whl")
    return wheel


def sdist(dist: Path, tools_python: str) -> Path:
    """Build the sdist (the C sources included) into ``dist``."""
    with tempfile.TemporaryDirectory() as tmp:
        source = source_tree(Path(tmp) / "src", pure=False)
        subprocess.run(
            [tools_python, "-m", "build", "--sdist", "--outdir", str(dist), str(source)],
            check=True, capture_output=True,
        )  # fmt: skip
    [built] = dist.glob("torchscope-*.tar.gz")
    return built


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def platform_wheel(pure: Path, native: Path, target: str, dist: Path) -> Path:
    """``pure`` plus the reader ``native`` (named by its EXT_SUFFIX), tagged for ``target``
    and the CPython that suffix names."""
    version = re.search(r"\.cpython-(\d+)-", native.name)
    if native.name == "_native.abi3.so":  # every CPython from the floor on
        py, abi = "cp{}{}".format(*cross_native.ABI3_FLOOR), "abi3"
    else:
        assert version, native.name
        py = abi = f"cp{version.group(1)}"
    platform = cross_native.TARGETS[target][2]
    name, ver = pure.name.split("-")[:2]
    out = dist / f"{name}-{ver}-{py}-{abi}-{platform}.whl"
    with zipfile.ZipFile(pure) as src:
        files = {n: src.read(n) for n in src.namelist()}
    info = f"{name}-{ver}.dist-info"
    files[f"torchscope/ingest/{native.name}"] = native.read_bytes()
    head = (
        files[f"{info}/WHEEL"].decode().replace("Root-Is-Purelib: true", "Root-Is-Purelib: false")
    )
    head = "".join(line for line in head.splitlines(True) if not line.startswith("Tag:"))
    tags = "".join(f"Tag: {py}-{abi}-{p}\n" for p in platform.split("."))
    files[f"{info}/WHEEL"] = (head.rstrip("\n") + "\n" + tags).encode()
    record = f"{info}/RECORD"
    lines = [_record_line(n, d) for n, d in files.items() if n != record] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as whl:
        for n, d in files.items():
            whl.writestr(
                zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0)), d, zipfile.ZIP_DEFLATED
            )
    return out


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 3:
        print(__doc__, file=sys.stderr)
        return 2
    dist = Path(argv[0])
    dist.mkdir(parents=True, exist_ok=True)
    pure = pure_wheel(dist)
    print(f"wheels: {pure.name}", file=sys.stderr)
    if len(argv) < 2:
        print("wheels: no NATIVE_ROOT: no platform wheel", file=sys.stderr)
        return 0
    for target in cross_native.TARGETS:
        for native in sorted((Path(argv[1]) / target).glob("_native*.so")):
            print(f"wheels: {platform_wheel(pure, native, target, dist).name}", file=sys.stderr)
    if len(argv) == 3:
        print(f"wheels: {sdist(dist, argv[2]).name}", file=sys.stderr)
    else:
        print("wheels: no TOOLS_PYTHON: no sdist", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
