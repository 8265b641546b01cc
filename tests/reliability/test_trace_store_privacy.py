"""The trace store is the user's own (issue 49): folders made 0700 without following a link,
a folder torchscope did not make never chmod-ed, a foreign or shared-writable one refused with
one message, no partial file left on a full disk (``prlimit --fsize``), stale temporaries
removed by retention, and a corrupt ``removed-traces.log`` read line by line. Real folders,
real ``chown`` (the suite runs as root in CI: skipped where it cannot), the real CLI."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import ENV, TORCHSCOPE
from torchscope.host.trace_store import (
    REMOVED_LOG,
    STALE_S,
    TRACE_SUFFIX,
    StoreError,
    TraceStore,
    default_trace_dir,
    removed_note,
)

GOOD = "import torch\n\n\ndef good():\n    return torch.ones(2) + 1\n"
MANY_OPS = GOOD.replace(
    "return torch.ones(2) + 1", "x = torch.ones(2)\n    for _ in range(300):\n        x = x + 1\n    return x"
)
"""300 ops a call: a trace of ~100 KB of JSON, ~10 KB gzipped."""
OTHER_UID = 12345


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _profile(cwd: Path, *options: str, env: dict[str, str] | None = None,
             prefix: tuple[str, ...] = (), source: str = GOOD,
             ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    (cwd / "good.py").write_text(source)
    command = [*prefix, *TORCHSCOPE, "profile", "good.py::good", "-q", "--steps", "1"]
    return subprocess.run(
        [*command, "--warmup", "1", *options],
        cwd=cwd,
        env={**ENV, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
    )


def _one_message(err: str, needle: str) -> None:
    assert "Traceback" not in err and needle in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("torchscope: "), err


def test_a_symlink_planted_where_the_store_goes_is_refused_and_not_followed(
    tmp_path: Path,
) -> None:
    cache, victim, work = tmp_path / "cache", tmp_path / "victim", tmp_path / "work"
    (cache / "torchscope").mkdir(parents=True)
    victim.mkdir(mode=0o755)
    work.mkdir()
    (cache / "torchscope" / "traces").symlink_to(victim)
    done = _profile(work, env={"XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 1
    _one_message(done.stderr, "is a symbolic link")
    assert _mode(victim) == 0o755 and not list(victim.iterdir())  # not chmod-ed, not written


def test_the_cache_folders_are_made_0700_and_a_trace_0600(tmp_path: Path) -> None:
    """A fresh cache: ``torchscope``, ``traces`` and the workspace's folder all 0700 (an old
    0755 ``~/.cache/torchscope``, torchscope's own by name, is tightened too)."""
    cache, work = tmp_path / "cache", tmp_path / "work"
    (cache / "torchscope").mkdir(parents=True, mode=0o755)
    work.mkdir()
    done = _profile(work, env={"XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 0, done.stderr
    store = cache / "torchscope" / "traces"
    [folder] = list(store.iterdir())
    assert [_mode(p) for p in (cache / "torchscope", store, folder)] == [0o700] * 3
    [trace] = list(folder.glob(f"*{TRACE_SUFFIX}"))
    assert _mode(trace) == 0o600
    assert not [p.name for p in folder.iterdir() if p != trace]  # no .partial, no .tmp


def test_a_shared_sticky_folder_is_used_as_it_is(tmp_path: Path) -> None:
    """A 1777 folder (``/tmp``-like) of the user's: the trace goes there, 0600, and the
    folder keeps its mode (it was made 0700 before issue 49)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (tmp_path / "work").mkdir()
    done = _profile(tmp_path / "work", "--trace-dir", str(shared))
    assert done.returncode == 0, done.stderr
    assert _mode(shared) == 0o1777
    assert [_mode(p) for p in shared.iterdir()] == [0o600]


@pytest.mark.parametrize("how", ["another user's", "group-writable"])
def test_a_folder_not_ours_is_refused_with_one_message(tmp_path: Path, how: str) -> None:
    folder = tmp_path / "traces"
    folder.mkdir(mode=0o755)
    if how == "another user's":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another uid needs root")
        os.chown(folder, OTHER_UID, OTHER_UID)
        needle = f"is owned by another user (uid {OTHER_UID})"
    else:
        folder.chmod(0o775)
        needle = "is writable by other users (mode 775, no sticky bit)"
    before = _mode(folder)
    (tmp_path / "work").mkdir()
    done = _profile(tmp_path / "work", "--trace-dir", str(folder))
    assert done.returncode == 1
    _one_message(done.stderr, needle)
    assert _mode(folder) == before and not list(folder.iterdir())


def test_an_unwritable_cache_is_one_message_before_a_worker_starts(tmp_path: Path) -> None:
    """The cache is a file: nothing can be made under it (root ignores permissions, not this)."""
    cache = tmp_path / "cache"
    cache.write_text("a file, not a folder")
    (tmp_path / "work").mkdir()
    started = time.monotonic()
    done = _profile(tmp_path / "work", env={"XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 1
    _one_message(done.stderr, f"{cache} is a file, not a folder")
    assert time.monotonic() - started < 30  # told before a worker imports torch, not after


@pytest.mark.parametrize("limit", [1000, 20_000])
def test_a_full_disk_is_one_message_and_leaves_no_partial_file(
    tmp_path: Path, limit: int
) -> None:
    """``RLIMIT_FSIZE`` (``prlimit --fsize``) for the whole job: the trace cannot be written
    whole, so nothing of it stays, and the message says so (not the user's function)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("no prlimit")
    traces, work = tmp_path / "traces", tmp_path / "work"
    work.mkdir()
    done = _profile(
        work, "--trace-dir", str(traces), prefix=(prlimit, f"--fsize={limit}"), source=MANY_OPS
    )
    assert done.returncode == 1
    _one_message(done.stderr, "no space left writing the trace to ")
    assert "free space or set --trace-dir" in done.stderr
    assert "raised" not in done.stderr  # the user's call is not blamed
    assert list(traces.iterdir()) == []


def test_retention_removes_stale_temporaries_and_keeps_fresh_ones(tmp_path: Path) -> None:
    store = TraceStore(tmp_path / "store")
    store.ready()
    old = time.time() - STALE_S - 60
    stale = ["a.pt.trace.json.gz.partial", "a.pt.trace.json.gz.partial.tmp", ".b.gz.123.tmp"]
    for name in [*stale, "fresh.partial.tmp", f"kept{TRACE_SUFFIX}"]:
        (store.folder / name).write_bytes(b"x")
    for name in [*stale, f"kept{TRACE_SUFFIX}"]:
        os.utime(store.folder / name, (old, old))
    store.prune()
    assert sorted(p.name for p in store.folder.iterdir()) == [
        "fresh.partial.tmp", f"kept{TRACE_SUFFIX}"
    ]


def test_a_corrupt_removed_log_is_read_line_by_line(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    gone = folder / f"gone{TRACE_SUFFIX}"
    stamp = time.time() - 86400
    lines = [b"garbage", b"nan\t%s" % bytes(gone), b"\xff\xfe\t\x00", b"1e999\t%s" % bytes(gone),
             b"%.0f\t%s" % (stamp, bytes(gone)), b"x\ty\tz"]  # fmt: skip
    (folder / REMOVED_LOG).write_bytes(b"\n".join(lines) + b"\n")
    note = removed_note(str(gone))
    assert note.startswith(f"removed on {time.strftime('%Y-%m-%d', time.localtime(stamp))}")
    (folder / REMOVED_LOG).write_bytes(b"\n".join(lines[:4]) + b"\n")
    assert removed_note(str(gone)) == ""  # only bad lines for it: as if never removed


def test_store_error_for_a_link_at_the_last_component(tmp_path: Path) -> None:
    """``--trace-dir`` itself a symbolic link: refused, its target untouched."""
    target = tmp_path / "real"
    target.mkdir(mode=0o755)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(StoreError, match="is a symbolic link"):
        TraceStore(tmp_path / "link").ready()
    assert _mode(target) == 0o755
    assert default_trace_dir(str(tmp_path)).name.startswith(tmp_path.name[:40])


def test_an_atomic_write_that_fails_leaves_nothing(tmp_path: Path) -> None:
    """``files.atomic_file``: the temporary goes with the error; a finished file is 0600."""
    from torchscope.files import atomic_file, write_atomic

    with pytest.raises(RuntimeError), atomic_file(tmp_path / "out.bin") as out:
        out.write(b"half")
        raise RuntimeError("the writer failed")
    assert list(tmp_path.iterdir()) == []
    write_atomic(tmp_path / "out.bin", b"whole")
    assert (tmp_path / "out.bin").read_bytes() == b"whole" and _mode(tmp_path / "out.bin") == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]
