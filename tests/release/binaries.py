"""What a built artefact is, read from its bytes, independently of the scripts that built it:
a shared object's format and architecture (ELF header's ``e_machine``, Mach-O header's
``cputype``), its glibc symbol versions (``readelf -V``) and a Mach-O's minimum macOS, and a
wheel's tags (its file name and its ``WHEEL`` file)."""

from __future__ import annotations

import re
import struct
import subprocess
import zipfile
from pathlib import Path

_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}
_MACHO_CPUS = {0x01000007: "x86_64", 0x0100000C: "arm64"}
_LC_VERSION_MIN_MACOSX, _LC_BUILD_VERSION = 0x24, 0x32


def arch(data: bytes) -> tuple[str, str]:
    """("elf" | "macho", architecture) of a shared object's bytes."""
    if data[:4] == b"\x7fELF":
        assert data[4] == 2 and data[5] == 1, "not a 64-bit little-endian ELF"
        (machine,) = struct.unpack_from("<H", data, 18)
        return "elf", _ELF_MACHINES.get(machine, str(machine))
    (magic, cpu) = struct.unpack_from("<Ii", data, 0)
    assert magic == 0xFEEDFACF, f"neither ELF nor 64-bit Mach-O: {data[:4]!r}"
    return "macho", _MACHO_CPUS.get(cpu, hex(cpu))


def macos_min(data: bytes) -> tuple[int, int]:
    """The minimum macOS (major, minor) a Mach-O's load commands ask for."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    offset = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        if cmd == _LC_BUILD_VERSION:
            version = struct.unpack_from("<I", data, offset + 12)[0]
            return version >> 16, (version >> 8) & 0xFF
        if cmd == _LC_VERSION_MIN_MACOSX:
            version = struct.unpack_from("<I", data, offset + 8)[0]
            return version >> 16, (version >> 8) & 0xFF
        offset += size
    raise AssertionError("no minimum macOS in the load commands")


def glibc_versions(path: Path) -> set[tuple[int, ...]]:
    """The GLIBC_x.y versions an ELF's symbols need (``readelf -V``)."""
    out = subprocess.run(
        ["readelf", "-V", "--wide", str(path)], capture_output=True, text=True, check=True
    )
    return {
        tuple(int(p) for p in v.split(".")) for v in re.findall(r"GLIBC_([\d.]+\d)", out.stdout)
    }


def wheel_tags(wheel: Path) -> tuple[set[str], set[str]]:
    """(the tags its file name expands to, the ``Tag:`` lines of its ``WHEEL``)."""
    py, abi, plat = wheel.name.removesuffix(".whl").split("-")[-3:]
    named = {f"{p}-{a}-{q}" for p in py.split(".") for a in abi.split(".") for q in plat.split(".")}
    with zipfile.ZipFile(wheel) as z:
        [info] = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        lines = z.read(info).decode().splitlines()
    return named, {line.split(": ", 1)[1] for line in lines if line.startswith("Tag: ")}


def python_symbols(path: Path) -> set[str]:
    """The CPython symbols (``Py*``, ``_Py*``) a shared object leaves for its interpreter to
    resolve (``llvm-nm -u``, which reads ELF and Mach-O alike; Mach-O's leading ``_`` dropped)."""
    macho = arch(path.read_bytes())[0] == "macho"
    dynamic = [] if macho else ["-D"]  # a stripped ELF keeps its needs in .dynsym alone
    out = subprocess.run(
        ["llvm-nm", "-u", *dynamic, str(path)], capture_output=True, text=True, check=True
    )
    names = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    if macho:
        names = {n[1:] for n in names if n.startswith("_")}
    return {n.split("@")[0] for n in names if n.startswith(("Py", "_Py"))}
