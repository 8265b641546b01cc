"""How the agent gets into a job, and what it costs there: ``python -m torchscope.agent -m
MODULE``, ``torchscope.agent.listen()``, the ``TORCHSCOPE_AGENT`` ``.pth`` hook (through
``site.addsitedir``, as site-packages' hooks are read), the CPython 3.14 ``sys.remote_exec``
path; and an idle agent imports neither torch nor msgpack and runs one thread."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.conftest import agent_env, start_job, started, torchscope

HOOK = (
    Path(__file__).resolve().parents[2] / "server" / "torchscope" / "agent" / "torchscope-agent.pth"
)

_PROBE = """
import json, os, sys, threading
{start}
from pathlib import Path
folder = Path(os.environ["XDG_RUNTIME_DIR"]) / "torchscope"
print(json.dumps({{
    "torch": "torch" in sys.modules, "msgpack": "msgpack" in sys.modules,
    "threads": [t.name for t in threading.enumerate() if t.name.startswith("torchscope")],
    "sockets": sorted(p.name for p in folder.iterdir()) if folder.exists() else [],
    "pid": os.getpid(),
}}))
"""


def _probe(runtime: Path, start: str, **env: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(start=start)],
        env=agent_env(runtime, **env), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_listen_is_idle_and_private(runtime: Path) -> None:
    seen = _probe(runtime, "import torchscope.agent; torchscope.agent.listen()")
    assert seen["torch"] is False and seen["msgpack"] is False
    assert seen["threads"] == ["torchscope-agent"]
    assert seen["sockets"] == [f"agent-{seen['pid']}.sock"]
    folder = runtime / "torchscope"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not list(folder.iterdir()), "the socket is removed at exit"


def test_pth_hook_starts_only_when_asked(runtime: Path) -> None:
    site = runtime / "site"
    site.mkdir()
    (site / HOOK.name).write_text(HOOK.read_text())
    start = f"import site; site.addsitedir({str(site)!r})"
    off = _probe(runtime, start)
    assert off["threads"] == [] and off["sockets"] == [] and off["torch"] is False
    on = _probe(runtime, start, TORCHSCOPE_AGENT="1")
    assert on["threads"] == ["torchscope-agent"] and on["sockets"] == [f"agent-{on['pid']}.sock"]
    assert on["torch"] is False


def test_module_entry_and_hello(runtime: Path, tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "loop.py").write_text((Path(__file__).parent / "train_loop.py").read_text())
    job = started(subprocess.Popen(
        [sys.executable, "-m", "torchscope.agent", "-m", "pkg.loop"],
        cwd=tmp_path, env=agent_env(runtime, STEPS="100000", PAUSE="0.01"),
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    ))  # fmt: skip
    assert job.stdout is not None and job.stdout.readline().startswith("ready")
    listed = torchscope(runtime, "jobs", "--json")
    info = json.loads(listed.stdout.splitlines()[0])
    assert info["pid"] == job.pid and "pkg.loop" in info["argv"]
    assert "pkg/loop.py::step" in info["functions"] and info["torch_version"]
    done = torchscope(runtime, "attach", str(job.pid), "--target",
                      f"{package / 'loop.py'}::step", "--calls", "2", "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "attached: pid" in done.stdout and "per line" in done.stdout
    assert job.stdout.readline().startswith("loss"), "the job goes on"


@pytest.mark.skipif(
    not hasattr(sys, "remote_exec"),
    reason="needs CPython >= 3.14 (sys.remote_exec, PEP 768) to load the agent into a job "
    "started without it; this interpreter is " + sys.version.split()[0],
)
def test_remote_exec_loads_the_agent(runtime: Path) -> None:
    job = start_job(runtime, steps=300, pause=0.01, agent=False)
    done = torchscope(runtime, "attach", str(job.pid), "--target",
                      f"{Path(__file__).parent / 'train_loop.py'}::step", "--calls", "2", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"] == "attached" and job.socket.exists()
    job.process.terminate()
    job.process.wait(30)


def test_ptrace_refusal_names_both_fixes() -> None:
    from torchscope.host.agent_load import _refused

    failure = _refused(4242, PermissionError(1, "Operation not permitted"))
    assert failure.kind == "ptrace" and "process 4242" in failure.message
    assert "python -m torchscope.agent" in failure.message  # the opt-in
    assert (
        "ptrace_scope=0" in failure.message and "CAP_SYS_PTRACE" in failure.message
    )  # the permission


@pytest.mark.skipif(hasattr(sys, "remote_exec"), reason="this interpreter can load the agent")
def test_no_agent_and_no_remote_exec_says_how_to_start_one(runtime: Path) -> None:
    job = start_job(runtime, steps=100_000, pause=0.01, agent=False)
    done = torchscope(
        runtime,
        "attach",
        str(job.pid),
        "--target",
        f"{Path(__file__).parent / 'train_loop.py'}::step",
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "python -m torchscope.agent" in done.stderr and "TORCHSCOPE_AGENT=1" in done.stderr
    assert "3.14" in done.stderr
    assert job.wait_for("loss"), "the job goes on"


def test_the_agent_starts_on_python_3_9(runtime: Path) -> None:
    """Opt-in is for any CPython >= 3.9: the agent's modules compile there, and it starts and
    removes its socket with the standard library alone (no torch, no msgpack installed)."""
    from tests.unit.test_oldest_python import _python39

    python = _python39()
    if python is None:
        pytest.skip("no CPython 3.9 on PATH or under ~/.pyenv")
    agent = HOOK.parent
    compiled = subprocess.run(
        [python, "-c", "import sys\nfor f in sys.argv[1:]: compile(open(f).read(), f, 'exec')",
         *map(str, sorted(agent.glob("*.py")))],
        capture_output=True, text=True,
    )  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    env = agent_env(runtime, PYTHONNOUSERSITE="1")
    env["PYTHONPATH"] = str(agent.parents[1])
    done = subprocess.run(
        [python, "-c", _PROBE.format(start="import torchscope.agent; torchscope.agent.listen()")],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["threads"] == ["torchscope-agent"] and seen["sockets"] == [
        f"agent-{seen['pid']}.sock"
    ]
    assert not list((runtime / "torchscope").iterdir())
