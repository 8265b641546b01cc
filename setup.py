"""The one thing pyproject.toml cannot say: install ``torchscope-agent.pth`` at the top of
site-packages, the hook that starts the agent in a job run with ``TORCHSCOPE_AGENT=1``
(docs/attach.md). It goes as a data file to site-packages relative to the install prefix, so a
wheel and an editable install (``pip install -e .``) both put it there. Without the variable the
hook is one environment lookup at interpreter start."""

import os
import sysconfig

from setuptools import setup

HOOK = os.path.join("server", "torchscope", "agent", "torchscope-agent.pth")
SITE = os.path.relpath(sysconfig.get_path("purelib"), sysconfig.get_path("data"))

setup(data_files=[(SITE, [HOOK])])
