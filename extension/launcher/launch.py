"""Start the torchscope language server from the VS Code extension.

Usage: ``<python> launch.py serve [args...]`` — the same as ``python -m torchscope serve``.

The packaged extension ships the ``torchscope`` package (``bundled/tool``) and its pure-Python
dependencies — pygls, lsprotocol, msgpack, cattrs, attrs, ... — (``bundled/libs``, installed
with ``pip install --target`` when the .vsix is built). Both go FIRST on ``sys.path`` so the
server never depends on (or is broken by) what the user's environment has: the user's
interpreter only needs torch. In a development checkout without ``bundled/tool`` the
repository's ``server/`` folder is used instead.

The worker subprocess (the user's code, same interpreter) gets the package folder from the
server itself (``torchscope.host.worker_process.PACKAGE_PARENT``); the libs folder is passed in
``TORCHSCOPE_WORKER_EXTRA_PATHS`` and goes at the END of the worker's ``sys.path`` (for msgpack
only), so bundled copies of common packages (typing_extensions, attrs) never shadow the user's
in the profiled code.
"""

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXTENSION = os.path.dirname(HERE)
BUNDLED_TOOL = os.path.join(EXTENSION, "bundled", "tool")
BUNDLED_LIBS = os.path.join(EXTENSION, "bundled", "libs")
DEV_SERVER = os.path.join(os.path.dirname(EXTENSION), "server")
#: Mirrors ``torchscope.host.worker_process.EXTRA_PATHS_ENV``.
WORKER_EXTRA_PATHS_ENV = "TORCHSCOPE_WORKER_EXTRA_PATHS"


def _has_package(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "torchscope", "__init__.py"))


def main() -> None:
    if _has_package(BUNDLED_TOOL):
        tool = BUNDLED_TOOL
    elif _has_package(DEV_SERVER):
        tool = DEV_SERVER
    else:
        sys.stderr.write(
            "torchscope: the torchscope package was found neither in %s nor in %s\n" % (BUNDLED_TOOL, DEV_SERVER)
        )
        sys.exit(2)
    front = [tool]
    if os.path.isdir(BUNDLED_LIBS):
        front.append(BUNDLED_LIBS)
    sys.path[:0] = front

    if os.path.isdir(BUNDLED_LIBS):
        extra = os.environ.get(WORKER_EXTRA_PATHS_ENV)
        os.environ[WORKER_EXTRA_PATHS_ENV] = BUNDLED_LIBS + (os.pathsep + extra if extra else "")

    sys.argv = ["torchscope"] + sys.argv[1:]
    runpy.run_module("torchscope", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
