"""Every package a release ships is what its name says: each native reader (cross-built on this
Linux machine with ziglang) has the architecture, the glibc symbol versions (≤ the manylinux
tag's) or the minimum macOS its wheel's platform tag promises, the CPython its Python tag
names, and each VSIX target carries only readers of its own platform (the universal one none).

The oracle is the artefacts' own bytes (``binaries.py``: ELF/Mach-O headers, ``readelf``) set
against what the tags mean (PEP 600's ``manylinux_X_Y_arch``, ``macosx_X_Y_arch``), never the
build scripts' tables. By default the readers are built here for this interpreter's CPython
only (four cross builds); ``scripts/release.sh`` points ``TORCHSCOPE_RELEASE_DIR`` at its
``dist/`` and the same checks run over every artefact it built.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from scripts.release import cross_native, wheels
from scripts.vscode import build_native

from tests.conftest import REPO
from tests.release import binaries

pytestmark = pytest.mark.slow  # four cross builds and a wheel (~30 s on 2 shared cores)

_ARCH = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "arm64"}
_VSIX_ARCH = {"linux-x64": ("elf", "x86_64"), "linux-arm64": ("elf", "aarch64"),
              "darwin-x64": ("macho", "x86_64"), "darwin-arm64": ("macho", "arm64")}  # fmt: skip


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("TORCHSCOPE_RELEASE_DIR")
    if given:
        return Path(given)
    tools = subprocess.run(
        ["bash", str(REPO / "scripts" / "release" / "ensure-tools.sh")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if tools.returncode != 0:
        pytest.skip(f"no release tools (ziglang): {tools.stderr.strip()[-300:]}")
    zig = tools.stdout.strip().splitlines()[-1]
    out = tmp_path_factory.mktemp("dist")
    pure = wheels.pure_wheel(out)
    for target in cross_native.TARGETS:
        folder = out / "native" / target
        folder.mkdir(parents=True)
        assert cross_native.build_one(target, [sys.executable], folder, zig), target
        [native] = folder.glob("_native*.so")
        wheels.platform_wheel(pure, native, target, out)
    return out


def _check_reader(data: bytes, name: str, where: Path, platform: str) -> None:
    """A reader named ``name`` (its bytes ``data``) fits the wheel platform tag ``platform``
    (an abi3 build's name says no platform)."""
    abi3 = name.endswith("/_native.abi3.so")
    platform = platform.replace("manylinux2014_", "manylinux_2_17_")  # PEP 600's alias
    linux = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", platform)
    mac = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", platform)
    assert linux or mac, platform
    if linux:
        glibc, machine = (int(linux[1]), int(linux[2])), linux[3]
        assert binaries.arch(data) == ("elf", _ARCH[machine]), (name, platform)
        assert abi3 or name.endswith(f"-{machine}-linux-gnu.so"), name
        where.write_bytes(data)
        needed = binaries.glibc_versions(where)
        assert needed and max(needed) <= glibc, (name, sorted(needed))
    elif mac:
        assert binaries.arch(data) == ("macho", _ARCH[mac[3]]), (name, platform)
        assert abi3 or name.endswith("-darwin.so"), name
        assert binaries.macos_min(data) <= (int(mac[1]), int(mac[2])), name


def test_every_wheel_carries_what_its_tags_promise(dist: Path, tmp_path: Path) -> None:
    found = sorted(dist.glob("torchscope-*.whl"))
    platforms = {w.name.split("-")[-1].removesuffix(".whl") for w in found}
    assert {"manylinux_2_17_x86_64.manylinux2014_x86_64", "any",
            "manylinux_2_17_aarch64.manylinux2014_aarch64", "macosx_11_0_arm64",
            "macosx_10_13_x86_64"} <= platforms  # fmt: skip
    for wheel in found:
        named, tagged = binaries.wheel_tags(wheel)
        assert named == tagged, wheel.name  # the file name and WHEEL agree
        with zipfile.ZipFile(wheel) as z:
            readers = [n for n in z.namelist() if n.startswith("torchscope/ingest/_native")
                       and n.endswith(".so")]  # fmt: skip
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            requires = [line for line in z.read(meta).decode().splitlines()
                        if line.startswith("Requires-Dist:") and "extra ==" not in line]  # fmt: skip
            # torch is a floor, never a pin: the user's own build stays (test_user_install)
            torch_reqs = [r for r in requires if re.match(r"Requires-Dist: torch\b", r)]
            assert torch_reqs == ["Requires-Dist: torch>=2.1"], requires
            assert z.testzip() is None
            if named == {"py3-none-any"}:
                assert readers == [], wheel.name
                continue
            [reader] = readers
            [(tag, abi)] = {tuple(t.split("-")[:2]) for t in tagged}
            if abi == "abi3":  # one build for this CPython and every later one
                assert reader == "torchscope/ingest/_native.abi3.so", reader
                assert tag >= "cp311" and len(tag) == 5, tag
            else:
                assert abi == tag and f".cpython-{tag.removeprefix('cp')}-" in reader, reader
            for platform in {t.split("-")[2] for t in tagged}:
                _check_reader(z.read(reader), reader, tmp_path / "reader.so", platform)


_READ = (
    "import sys; sys.path.insert(0, sys.argv[1]); from torchscope.ingest import accel, load_trace;"
    "n = accel.native; print(n and n.__file__.rsplit('/', 1)[1]);"
    "print(len(load_trace(sys.argv[2]).ops));"
    "exec('try: n.Span()\\nexcept TypeError: print(\\'refused\\')') if n else print('refused')"
)


def _serves(wheel: Path, version: tuple[int, int]) -> bool:
    """Whether CPython ``version`` installs ``wheel`` (its Python and ABI tags)."""
    py, abi = wheel.name.split("-")[2:4]
    if abi == "abi3":
        return version >= (int(py[2]), int(py[3:]))
    return py == f"cp{version[0]}{version[1]}"


def test_this_machines_wheels_read_a_trace_in_every_cpython_they_serve(
    dist: Path, tmp_path: Path
) -> None:
    """Each wheel for this machine, unpacked, reads a trace with its native reader in every
    CPython here that its tags serve (the abi3 one in 3.11 and every later one), as many ops as
    the pure-Python reader in the same interpreter; its types cannot be made from Python."""
    machine = {"x86_64": "x86_64", "aarch64": "aarch64"}.get(os.uname().machine)
    here = sorted(dist.glob(f"torchscope-*-manylinux*_{machine}.whl"))
    if sys.platform != "linux" or not here:
        pytest.skip("no wheel for this machine")
    trace = str(REPO / "tests" / "data" / "traces" / "hta_ddp_v100_rank1.json.gz")
    pythons = [found for found in map(build_native.probe, build_native.interpreters()) if found]
    tried = []
    for wheel in here:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp_path / wheel.name)
        for found in pythons:
            version = tuple(map(int, found[4].split(".")))
            if not _serves(wheel, (version[0], version[1])):
                continue
            command = [found[0], "-I", "-c", _READ, str(tmp_path / wheel.name), trace]
            base = {"PATH": "/usr/bin:/bin"}
            runs = [
                subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
                for env in (base, {**base, "TORCHSCOPE_NO_NATIVE": "1"})
            ]
            assert all(r.returncode == 0 for r in runs), [r.stderr[-1500:] for r in runs]
            (loaded, ops, refused), (none, reference, _) = (r.stdout.split() for r in runs)
            assert loaded.startswith("_native.") and none == "None", (wheel.name, found[4])
            assert ops == reference and refused == "refused", (wheel.name, found[4])
            tried.append((wheel.name, found[4]))
    assert len({w for w, _ in tried}) == len(here), tried  # every wheel found its CPython


@pytest.mark.skipif(shutil.which("llvm-nm") is None, reason="no llvm-nm to read Mach-O symbols")
def test_every_platform_needs_the_same_cpython_symbols(dist: Path, tmp_path: Path) -> None:
    """No arm64 or macOS machine runs here; but each platform's reader for a CPython version
    asks that interpreter for exactly the symbols this machine's build does, and this
    machine's build loads and reads traces (the VSIX and user-install tests)."""
    needs: dict[str, dict[str, set[str]]] = {}
    for wheel in dist.glob("torchscope-*-cp*.whl"):
        with zipfile.ZipFile(wheel) as z:
            [reader] = [n for n in z.namelist() if n.endswith(".so")]
            (tmp_path / wheel.name).write_bytes(z.read(reader))
        version = wheel.name.split("-")[2]
        needs.setdefault(version, {})[wheel.name] = binaries.python_symbols(tmp_path / wheel.name)
    assert needs
    for version, by_wheel in needs.items():
        assert len(by_wheel) == 4, (version, sorted(by_wheel))
        first, *others = by_wheel.values()
        assert first and all(o == first for o in others), version


def test_each_vsix_carries_only_its_platforms_readers(dist: Path, tmp_path: Path) -> None:
    found = sorted(dist.glob("*.vsix"))
    if not found:
        pytest.skip("no VSIX here: scripts/release.sh builds them (TORCHSCOPE_RELEASE_DIR)")
    wheel_readers = set()
    for wheel in dist.glob("torchscope-*.whl"):
        with zipfile.ZipFile(wheel) as z:
            wheel_readers |= {z.read(n) for n in z.namelist() if n.endswith(".so")}
    targets = set()
    for vsix in found:
        with zipfile.ZipFile(vsix) as z:
            manifest = z.read("extension.vsixmanifest").decode()
            target = re.search(r'TargetPlatform="([\w-]+)"', manifest)
            objects = [n for n in z.namelist() if n.endswith(".so")]
            if target is None:  # the universal VSIX: pure Python
                assert objects == [], (vsix.name, objects)
                targets.add("universal")
                continue
            targets.add(target[1])
            assert any("/_native" in n for n in objects), vsix.name
            for name in objects:
                assert binaries.arch(z.read(name)) == _VSIX_ARCH[target[1]], (vsix.name, name)
                if "/_native" in name:  # the very build its platform's wheel carries
                    assert z.read(name) in wheel_readers, (vsix.name, name)
    assert targets == {*_VSIX_ARCH, "universal"}, targets


def test_the_vsix_for_this_machine_and_the_universal_one_read_a_trace(
    dist: Path, tmp_path: Path
) -> None:
    """Their bundled server, started by the bundled launcher in this interpreter as the editor
    starts it, reads a trace: with the native reader from the linux-x64 VSIX, in pure Python
    (and saying so, with the cost) from the universal one; both give the same report."""
    host = f"linux-{'x64' if os.uname().machine == 'x86_64' else 'arm64'}"
    found = {v.name: v for v in dist.glob("*.vsix")}
    mine = [n for n in found if n.startswith(f"torchscope-{host}-")]
    universal = [n for n in found if re.fullmatch(r"torchscope-[\d.]+\.vsix", n)]
    if sys.platform != "linux" or not mine or not universal:
        pytest.skip("no VSIX for this machine here: scripts/release.sh builds them")
    trace = REPO / "tests" / "data" / "traces" / "hta_alexnet_a100.json.gz"
    outputs = {}
    for name in (mine[0], universal[0]):
        with zipfile.ZipFile(found[name]) as z:
            z.extractall(tmp_path / name)
        launcher = tmp_path / name / "extension" / "extension" / "launcher" / "launch.py"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}  # no PYTHONPATH: the bundle only
        done = subprocess.run([sys.executable, str(launcher), "analyze", "-v", "--json", str(trace)],
                              capture_output=True, text=True, timeout=300, env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        outputs[name] = (done.stderr, json.loads(done.stdout))
    libs = tmp_path / universal[0] / "extension" / "extension" / "bundled" / "libs"
    msgpack = subprocess.run(
        [sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import msgpack; "
         "assert msgpack.unpackb(msgpack.packb({'a': [1, 2.5]})) == {'a': [1, 2.5]}; "
         "print(msgpack.Packer.__module__, msgpack.__file__)", str(libs)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    module, where = msgpack.stdout.split()
    assert module == "msgpack.fallback" and where.startswith(str(libs)), msgpack.stdout
    assert "trace reader: native (C)" in outputs[mine[0]][0]
    assert "native trace reader is not loaded" in outputs[universal[0]][0]
    assert outputs[mine[0]][1] == outputs[universal[0]][1]
