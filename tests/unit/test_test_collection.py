"""Which test files import the function's module (``host/test_collection.py``): read from their
``import`` statements on disk, never run; and the node ids of ``pytest --collect-only -q``."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchscope.host.test_collection import imports_module, node_ids


@pytest.mark.parametrize(
    ("source", "imports"),
    [
        ("import pkg.model\n", True),
        ("from pkg.model import scale\n", True),
        ("from pkg import model\n", True),
        ("from model import scale\n", True),  # pkg/ itself on sys.path
        ("import pkg.model as m\n", True),
        ("from . import model\n", True),  # tests inside pkg/
        ("from .model import scale\n", True),
        ("import pkg.other\nfrom pkg import other\n", False),
        ("def f(:\n", False),  # not Python: not an importer
    ],
)
def test_imports_of_the_module(tmp_path: Path, source: str, imports: bool) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    target = package / "model.py"
    target.write_text("def scale(x):\n    return x\n")
    test = package / "test_model.py"
    test.write_text(source)
    assert imports_module(test, target) is imports


def test_a_packages_init_is_imported_by_the_packages_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    init = tmp_path / "pkg" / "__init__.py"
    init.write_text("")
    test = tmp_path / "test_pkg.py"
    test.write_text("import pkg\n")
    assert imports_module(test, init)
    assert imports_module(init, init)  # a test in the function's own file


def test_node_ids_are_the_lines_before_the_summary() -> None:
    output = (
        "tests/test_x.py::test_a[1]\n"
        "tests/test_x.py::TestB::test_c\n"
        "\n"
        "==================================== ERRORS ====================================\n"
        "E   ModuleNotFoundError: No module named 'nosuch'\n"
        "ERROR tests/test_bad.py\n"
        "0.01s setup    tests/test_x.py::test_a[1]\n"
        "2 tests collected, 1 error in 0.76s\n"
    )
    assert node_ids(output) == ["tests/test_x.py::test_a[1]", "tests/test_x.py::TestB::test_c"]
