"""Soak: 200 consecutive profiles through one ``torchscope serve``, good and failing mixed.

Each job's outcome is checked against what its function must give (ok, or the failure kind);
after each job no process the job started may remain. Prints the server's and the worker's
RSS at the start and the end, the leftover processes and temp files, and the unexpected
failures. Targets: RSS growth < 50 MB, zero leftovers, zero unexpected failures.

    .venv/bin/python bench/soak.py [--profiles 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from lsprotocol import types
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.reliability.cases import def_line, write_cases  # noqa: E402

MARK_VAR = "TORCHSCOPE_SOAK_MARK"
PERSISTENT = ("torchscope serve", "torchscope.worker.main", "torchscope.host.guardian")

#: (function, expected kind or "ok", extra arguments); a cycle of 10, the last slot rotating.
CYCLE: list[tuple[str, str, dict[str, Any]]] = [
    ("good", "ok", {}),
    ("raises", "call-raised", {}),
    ("good", "ok", {}),
    ("reads_stdin", "call-raised", {}),
    ("starts_children", "ok", {}),
    ("calls_exit", "call-raised", {}),
    ("coroutine", "ok", {}),
    ("good", "ok", {}),
    ("generator", "ok", {}),
]
ROTATING: list[tuple[str, str, dict[str, Any]]] = [
    ("segfault", "worker", {}),
    ("calls_os_exit", "worker", {}),
    ("spins", "timeout", {"timeout_s": 2}),
    ("eats_memory", "memory", {"max_memory": "1G"}),
    ("child_then_crash", "worker", {}),
]


def plan(count: int) -> list[tuple[str, str, dict[str, Any]]]:
    jobs = []
    for index in range(count):
        slot = index % (len(CYCLE) + 1)
        if slot < len(CYCLE):
            jobs.append(CYCLE[slot])
        else:
            jobs.append(ROTATING[(index // (len(CYCLE) + 1)) % len(ROTATING)])
    return jobs


def _read(pid: int, name: str) -> bytes:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def marked(mark: str) -> list[tuple[int, str]]:
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and needle in _read(int(name), "environ").split(b"\0"):
            stat = _read(int(name), "stat").decode(errors="replace")
            if stat[stat.rfind(")") + 2 :][:1] in ("Z", "X", ""):
                continue
            cmd = _read(int(name), "cmdline").replace(b"\0", b" ").decode(errors="replace")
            found.append((int(name), cmd))
    return found


def rss_mb(pid: Optional[int]) -> float:
    for line in _read(pid or 0, "status").decode().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def find(mark: str, what: str) -> Optional[int]:
    return next((pid for pid, cmd in marked(mark) if what in cmd), None)


async def start_server(env: dict[str, str], work: Path) -> tuple[LanguageClient, asyncio.Event]:
    """``torchscope serve`` with a client that notes each diagnostics publish."""
    client = LanguageClient("soak", "1")
    published = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        published.set()

    for method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE, "torchscope/profileDone"):
        client.feature(method)(lambda params: None)
    await client.start_io(sys.executable, "-m", "torchscope", "serve", env=env)
    settings = {"steps": 2, "warmup": 1, "trace_dir": str(work / "traces")}
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=work.as_uri(),
            initialization_options={"settings": settings},
        )
    )
    client.initialized(types.InitializedParams())
    return client, published


class Tally:
    """What the soak saw: unexpected outcomes, leftovers, and RSS samples."""

    def __init__(self) -> None:
        self.unexpected: list[str] = []
        self.leftovers: list[str] = []
        self.server_rss: list[float] = []
        self.by_worker: dict[int, list[float]] = {}  # RSS after each good job, per worker

    def report(self, after_exit: list[tuple[int, str]], temp_new: list[str], traces: int) -> bool:
        start, end = self.server_rss[0], self.server_rss[-1]
        print(f"server RSS: start {start:.1f} MB, end {end:.1f} MB, growth {end - start:+.1f} MB")
        longest = max(self.by_worker.values(), key=len)
        first = next(iter(self.by_worker.values()))
        print(
            f"worker RSS: first worker {first[0]:.1f} MB; {len(self.by_worker)} workers (a fresh "
            f"one after each crash, timeout and memory stop); the longest-lived ran "
            f"{len(longest)} good jobs: {longest[0]:.1f} MB -> {longest[-1]:.1f} MB "
            f"({longest[-1] - longest[0]:+.1f} MB)"
        )
        left = self.leftovers
        print(f"leftover processes after jobs: {len(left)}; after shutdown: {len(after_exit)}")
        for line in left[:10] + [f"after shutdown: {p}" for p in after_exit]:
            print("  ", line)
        print(f"new temp entries: {len(temp_new)} {temp_new[:10]}; traces kept: {traces} (max 20)")
        print(f"unexpected failures: {len(self.unexpected)}")
        for line in self.unexpected[:20]:
            print("  ", line[:400])
        worker_growth = max(v[-1] - v[0] for v in self.by_worker.values())
        ok = end - start < 50 and worker_growth < 50 and not left and not after_exit
        return ok and not self.unexpected and not temp_new


async def soak(count: int) -> int:
    mark = uuid.uuid4().hex
    work = Path(tempfile.mkdtemp(prefix="torchscope-soak-"))
    private_tmp = work / "tmp"  # the server's and worker's TMPDIR: what they leave is theirs
    private_tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO / "server"), MARK_VAR: mark}
    env["TMPDIR"] = str(private_tmp)
    cases = write_cases(work)
    client, published = await start_server(env, work)
    server = find(mark, "torchscope serve")
    tally = Tally()
    started = time.monotonic()
    for index, (name, expected, extra) in enumerate(plan(count)):
        published.clear()
        args = {"uri": cases.as_uri(), "line": def_line(cases, name) + 1, **extra}
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="torchscope.profile", arguments=[args])
        )
        await asyncio.wait_for(published.wait(), 30)
        kind = "ok" if result["ok"] else result.get("kind")
        if kind != expected:
            tally.unexpected.append(f"#{index} {name}: expected {expected}, got {kind}: {result}")
        left = [p for p in marked(mark) if not any(m in p[1] for m in PERSISTENT)]
        tally.leftovers += [f"#{index} {name}: {pid} {cmd}" for pid, cmd in left]
        tally.server_rss.append(rss_mb(server))
        worker = find(mark, "torchscope.worker.main")
        if kind == "ok" and worker is not None:
            tally.by_worker.setdefault(worker, []).append(rss_mb(worker))
        if (index + 1) % 20 == 0:
            print(f"  {index + 1} profiles, {time.monotonic() - started:.0f} s", flush=True)
    print(f"{count} profiles in {time.monotonic() - started:.0f} s")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    await asyncio.sleep(2)
    # torch's own compile cache (torchinductor_<user>) is meant to persist: not a leftover.
    temp_new = sorted(n for n in os.listdir(private_tmp) if not n.startswith("torchinductor_"))
    traces = len(list((work / "traces").iterdir()))
    ok = tally.report(marked(mark), temp_new, traces)
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=200)
    sys.exit(asyncio.run(soak(parser.parse_args().profiles)))


if __name__ == "__main__":
    main()
