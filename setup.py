"""The one thing pyproject.toml cannot say: install ``torchscope-agent.pth`` at the top of
site-packages, the hook that starts the agent in a job run with ``TORCHSCOPE_AGENT=1``
(docs/attach.md), as pytest-cov installs its own. A wheel gets it from ``build_py`` (a file at
the top of ``build_lib`` lands in site-packages); an editable install (``pip install -e .``)
from ``editable_wheel``, which does not run ``build_py``'s copy into its wheel. Without the
variable the hook is one environment lookup at interpreter start."""

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

NAME = "torchscope-agent.pth"
HOOK = os.path.join("server", "torchscope", "agent", NAME)


class BuildWithHook(build_py):
    def run(self):
        super().run()
        self.copy_file(HOOK, os.path.join(self.build_lib, NAME), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, NAME)]


class EditableWithHook(editable_wheel):
    def _run_build_commands(self, dist_name, unpacked_wheel, build_lib, tmp_dir):
        found = super()._run_build_commands(dist_name, unpacked_wheel, build_lib, tmp_dir)
        shutil.copyfile(HOOK, os.path.join(unpacked_wheel, NAME))
        return found


setup(cmdclass={"build_py": BuildWithHook, "editable_wheel": EditableWithHook})
