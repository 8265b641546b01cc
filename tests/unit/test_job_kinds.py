"""Job kinds: one request type per kind in protocol.py, one worker module per kind, and the
host's requests carry the whole ``JobOptions`` (no field copied by hand, so none can drift)."""

from pathlib import Path

from torchscope.host.compare_run import COMPARE
from torchscope.host.profile_run import PROFILE, job_fields
from torchscope.host.trace_store import TRACE_SUFFIX, TraceStore
from torchscope.protocol import (
    JOB_KINDS,
    CompareRequest,
    FrameDecoder,
    JobError,
    JobOptions,
    ProfileRequest,
    encode,
)
from torchscope.source.targets import Target
from torchscope.worker import jobs

TARGET = Target("/w/model.py", "fn", 3, 3, 5, ())


def test_every_kind_has_one_worker_module() -> None:
    handlers = jobs._handlers()
    assert set(JOB_KINDS) == {"profile", "compare", "diff", "run"}
    assert set(handlers) == set(JOB_KINDS)
    modules = {h.__module__.rsplit(".", 1)[-1] for h in handlers.values()}
    assert modules == set(JOB_KINDS)  # worker/jobs/<kind>.py


def test_an_unknown_kind_is_a_job_error_not_a_crash() -> None:
    class Strange(ProfileRequest):
        TYPE = "strange"

    reply = jobs.run_request(Strange(7, "/a.py", "fn", None, "/t"), lambda _: None, False)
    assert isinstance(reply, JobError) and reply.job_id == 7 and "strange" in reply.message


def test_with_stack_and_every_option_reach_a_compare_request(tmp_path: Path) -> None:
    options = JobOptions(steps=2, warmup=1, with_stack=True, compile_mode="reduce-overhead")
    store = TraceStore(tmp_path)
    request = COMPARE.request(job_fields(4, TARGET, "fn(1)", options, store), TARGET, store)
    assert isinstance(request, CompareRequest)
    assert request.options == options and request.options.with_stack
    assert request.compiled_trace_path and request.compiled_trace_path != request.trace_path
    [decoded] = FrameDecoder().feed(encode(request))
    assert decoded == request and decoded.options.with_stack  # type: ignore[attr-defined]


def test_profile_request_carries_the_options(tmp_path: Path) -> None:
    options = JobOptions(device="cpu", timing_calls=3)
    store = TraceStore(tmp_path)
    request = PROFILE.request(job_fields(1, TARGET, None, options, store), TARGET, store)
    assert isinstance(request, ProfileRequest) and request.options is options
    assert request.trace_path.startswith(str(tmp_path))


def test_options_are_validated_with_a_clear_message() -> None:
    import pytest

    with pytest.raises(ValueError, match="'steps' must be a number >= 1"):
        JobOptions().updated({"steps": 0})
    with pytest.raises(ValueError, match="'compile_mode' must be one of default"):
        JobOptions().updated({"compile_mode": "fastest"})
    with pytest.raises(ValueError, match="'with_stack' must be true or false"):
        JobOptions().updated({"with_stack": "yes"})
    assert JobOptions().updated({"steps": 3.0, "unknown": 1}).steps == 3


def test_a_diff_request_carries_the_options_and_the_earlier_source(tmp_path: Path) -> None:
    from torchscope.host.diff_run import DiffJobKind
    from torchscope.protocol import DiffRequest

    options = JobOptions(steps=2, timing_budget_s=0.5)
    store = TraceStore(tmp_path)
    kind = DiffJobKind("def fn():\n    return 1\n", "HEAD~1")
    request = kind.request(job_fields(9, TARGET, "fn()", options, store), TARGET, store)
    assert isinstance(request, DiffRequest) and request.options is options
    assert (request.before_source, request.before_label) == (kind.before_source, "HEAD~1")
    assert request.before_trace_path and request.before_trace_path != request.trace_path
    [decoded] = FrameDecoder().feed(encode(request))
    assert decoded == request


def test_a_trace_another_process_removed_does_not_stop_a_new_one(tmp_path: Path) -> None:
    """Two stores share the cache folder (a notebook and a CLI): a trace listed but gone
    before its age is read (here a link to nothing) is left out, not an error."""
    store = TraceStore(tmp_path, keep=2)
    kept = tmp_path / f"kept{TRACE_SUFFIX}"
    kept.write_text("{}")
    (tmp_path / f"gone{TRACE_SUFFIX}").symlink_to(tmp_path / "nothing")
    assert store.traces() == [kept]
    assert store.new_path("model.py", "fn").parent == tmp_path
