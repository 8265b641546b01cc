"""The pieces the reliability guarantees are built from, on real processes and real files."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
import subprocess
import sys

import pytest

from torchscope.host.browser import remove, write_redirect
from torchscope.host.process_tree import (
    describe_exit,
    kill_marked,
    marked_pids,
    new_marker,
)
from torchscope.protocol import parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [("12G", 12 << 30), ("512M", 512 << 20), ("1.5GB", 3 << 29), ("1 GiB", 1 << 30)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "12X", "1K"])
def test_bad_sizes_say_what_is_allowed(text: str) -> None:
    with pytest.raises(ValueError, match=r"12G|16 MB"):
        parse_size(text)


def test_exit_descriptions_name_signals() -> None:
    assert describe_exit(-signal.SIGSEGV).startswith("the worker crashed: SIGSEGV (segmentation")
    assert describe_exit(-signal.SIGABRT).startswith("the worker crashed: SIGABRT (abort)")
    assert "exited with code 7" in describe_exit(7)


def test_kill_marked_kills_setsid_and_sigterm_ignoring_processes() -> None:
    marker = new_marker()
    env = {**os.environ, "TORCHSCOPE_JOB": marker}
    code = (
        "import os, signal, time; os.setsid(); signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(600)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    assert marked_pids(marker) == [child.pid]
    killed = asyncio.run(kill_marked(marker, grace_s=0.2))
    assert killed == [child.pid]
    child.wait(5)  # (reaped by kill_marked already: we are its parent here)
    with pytest.raises(ProcessLookupError):  # SIGTERM was ignored: SIGKILL followed
        os.kill(child.pid, 0)
    assert marked_pids(marker) == []


def test_redirect_page_is_private_and_goes_to_the_link() -> None:
    link = "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/SECRET/t.json.gz"
    page = write_redirect(link)
    try:
        assert stat.S_IMODE(page.stat().st_mode) == 0o600
        assert stat.S_IMODE(page.parent.stat().st_mode) == 0o700
        assert "SECRET" not in str(page)
        assert 'content="0;url=https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/SECRET' in (
            page.read_text()
        )
    finally:
        remove(page)
    assert not page.parent.exists()


def test_max_memory_is_a_job_option_from_flag_setting_and_argument() -> None:
    """``--max-memory``, the server setting and a command argument all fill
    ``JobOptions.max_memory`` (text; "" is half the RAM), each checked the same way."""
    from torchscope.cli import build_parser
    from torchscope.cli.common import job_options
    from torchscope.lsp.settings import Settings, SettingsError
    from torchscope.protocol import JobOptions

    args = build_parser().parse_args(["profile", "x.py::f", "--max-memory", "12G"])
    assert job_options(args, None).max_memory == "12G"
    assert JobOptions().max_memory == ""  # the default: half the physical memory
    assert JobOptions().updated({"max_memory": 1 << 30}).max_memory == str(1 << 30)
    assert Settings().updated({"max_memory": " 2G "}).job.max_memory == "2G"
    with pytest.raises(SettingsError, match=r"setting 'max_memory'.*12G"):
        Settings().updated({"max_memory": "lots"})
    with pytest.raises(SystemExit):
        build_parser().parse_args(["profile", "x.py::f", "--max-memory", "1K"])
