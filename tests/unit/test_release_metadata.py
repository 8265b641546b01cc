"""One version in three files, a licence, a changelog with the version's section, and the
extension's marketplace metadata (what ``vsce package`` checks without --skip-license)."""

from __future__ import annotations

import json
import re
import struct

import tomllib

from tests.conftest import REPO


def _versions() -> dict[str, str]:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    package = json.loads((REPO / "package.json").read_text())["version"]
    found = re.search(r'^__version__ = "([^"]+)"$',
                      (REPO / "server" / "torchscope" / "_version.py").read_text(), re.M)  # fmt: skip
    assert found
    return {"pyproject.toml": pyproject, "package.json": package, "_version.py": found.group(1)}


def test_one_version_in_three_files() -> None:
    versions = _versions()
    assert len(set(versions.values())) == 1, versions
    lock = json.loads((REPO / "package-lock.json").read_text())
    assert lock["version"] == lock["packages"][""]["version"] == versions["package.json"]


def test_the_changelog_has_a_section_for_the_version() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    version = _versions()["package.json"]
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.M)
    assert headings[0] == "Unreleased" or headings[0] == version, headings
    assert version in headings
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d\d-\d\d$", changelog, re.M)


def test_the_licence_is_mit_everywhere() -> None:
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")
    assert json.loads((REPO / "package.json").read_text())["license"] == "MIT"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]


def test_the_extension_metadata() -> None:
    package = json.loads((REPO / "package.json").read_text())
    assert package["categories"] == ["Machine Learning", "Data Science", "Visualization"]
    assert package["preview"] is True
    assert package["repository"]["url"].startswith("https://")
    icon = (REPO / package["icon"]).read_bytes()
    assert icon[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", icon[16:24]) == (128, 128)  # IHDR width, height
    package_script = package["scripts"]["package"]
    assert "--skip-license" not in package_script
    assert "--allow-missing-repository" not in package_script
    ignore = (REPO / ".vscodeignore").read_text().splitlines()
    for needed in (package["icon"], "LICENSE", "CHANGELOG.md"):
        assert f"!{needed}" in ignore, needed
