"""``torchscope profile … --sweep batch=…`` for real: a program runs, its call is captured, and
the capture replays at each batch size — every tensor argument whose dim 0 is the captured
batch size cut or repeated (inside a dict and a tuple too), other tensors and the module's own
buffers as captured. The function checks the shapes it gets itself, so a point that got them
wrong fails. No capture, or no tensor with a batch dimension, is one clear message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.worker.test_run import FAST, _json_lines, _write, torchscope

MODEL = """\
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(256, 256)
            self.register_buffer("table", torch.zeros(8, 256))  # dim 0 is the batch size: kept

        def forward(self, x, extras, scale):
            assert x.shape[0] == extras["mask"].shape[0] == extras["pair"][0].shape[0], "resized"
            assert self.table.shape[0] == 8 and scale.shape == (256,), "kept"
            y = torch.relu(self.linear(x)) * extras["mask"] * scale
            return y.sum() + extras["pair"][0].sum() * extras["pair"][1]


    def add(a, b):
        return a + b
"""

MAIN = """\
    import torch
    import model

    net = model.Net()
    for _ in range(2):
        extras = {"mask": torch.ones(8, 256), "pair": (torch.arange(8.0), 3)}
        net(torch.randn(8, 256), extras, torch.ones(256))
        model.add(torch.tensor(2.0), 3)
"""


@pytest.fixture
def captured(tmp_path: Path, trace_dir: Path) -> Path:
    """A workspace whose program's calls of Net.forward (batch 8) and add are captured."""
    _write(tmp_path, "model.py", MODEL)
    _write(tmp_path, "main.py", MAIN)
    run = torchscope(
        tmp_path, "run", "--target", "model.py::Net.forward", "--target", "model.py::add",
        "--capture", "--calls", "1", "-q", "--trace-dir", str(trace_dir), *FAST,
        "--", "python", "main.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return tmp_path


def test_a_capture_replays_at_each_batch_size(captured: Path, trace_dir: Path) -> None:
    sweep = torchscope(
        captured, "profile", "model.py::Net.forward", "--sweep", "batch=1,8,128", "--json",
        "--trace-dir", str(trace_dir), *FAST,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    [data] = _json_lines(sweep)
    points = data["sweep"]["points"]
    assert data["sweep"]["name"] == "batch" and data["sweep"]["captured_batch"] == 8
    assert data["sweep"]["call"] == "Net.forward(<captured inputs at batch {batch}>)"
    assert [p["N"] for p in points] == [1, 8, 128]
    assert [p["error"] for p in points] == [None, None, None], points
    assert points[2]["median_us"] > 2 * points[0]["median_us"], points  # 128 rows vs 1
    capture = captured / ".torchscope" / "inputs" / "model" / "Net.forward.pt"
    assert data["inputs"] == {  # the largest size's profile
        "source": "capture",
        "path": str(capture),
        "captured_at": data["inputs"]["captured_at"],
        "batch": 128,
        "captured_batch": 8,
        "batch_dim": 0,
        "batch_dim_from": "dim 0 (the convention), the size 3 of 4 tensor arguments share",
    }
    assert data["sweep"]["batch_dim"] == 0

    around = torchscope(
        captured, "profile", "model.py::Net.forward", "--sweep", "batch", "--json",
        "--trace-dir", str(trace_dir), *FAST,
    )  # fmt: skip
    assert around.returncode == 0, around.stderr
    [data] = _json_lines(around)
    assert [p["N"] for p in data["sweep"]["points"]] == [2, 4, 8, 16, 32]
    assert all(p["error"] is None for p in data["sweep"]["points"]), data["sweep"]["points"]


def test_no_capture_or_no_batch_dimension_is_one_message(captured: Path) -> None:
    """add(tensor(2.0), 3): a 0-d tensor has no dim 0; scale was never captured."""
    _write(captured, "other.py", "def scale(x):\n    return x * 2\n")
    for spec, said in [
        ("model.py::add", "no tensor argument of the captured call of add has a batch dimension"),
        ("other.py::scale", "--sweep batch replays the capture of a real call of scale, and there is none"),
    ]:
        done = torchscope(captured, "profile", spec, "--sweep", "batch=2,4", *FAST)
        assert done.returncode == 1, done.stderr
        assert said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_resizing_cuts_repeats_and_keeps_the_containers() -> None:
    """In process: rows repeat in order, a tensor that needs a gradient is a leaf again, a
    namedtuple and an OrderedDict keep their types, a module's parameters are not arguments."""
    from collections import OrderedDict, namedtuple

    import torch

    from torchscope.worker.batch_resize import at_batch
    from torchscope.worker.call_expression import PreparedCall

    pair = namedtuple("pair", "rows count")
    module = torch.nn.Linear(2, 2)  # weight: dim 0 is 2, like the smaller batch below
    x = torch.arange(3.0).reshape(3, 1).requires_grad_()
    args = (module, x, OrderedDict(m=torch.ones(3, 2)), pair(torch.zeros(3), 5), [torch.ones(2)])
    prepared = PreparedCall(lambda *a, **k: None, args, {"k": torch.ones(3)}, "f(<captured inputs>)")

    larger, captured, dim, _ = at_batch(prepared, 7, "f")
    assert dim == 0
    assert captured == 3 and larger.source == "f(<captured inputs at batch 7>)"
    module_, x7, mapping, rows, listed = larger.args
    assert module_ is module and module.weight.shape == (2, 2)
    assert x7.flatten().tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert x7.is_leaf and x7.requires_grad
    assert type(mapping) is OrderedDict and mapping["m"].shape == (7, 2)
    assert isinstance(rows, pair) and rows.rows.shape == (7,) and rows.count == 5
    assert listed[0].shape == (2,) and larger.kwargs["k"].shape == (7,)

    smaller, *_ = at_batch(prepared, 2, "f")
    assert smaller.args[1].flatten().tolist() == [0, 1] and smaller.args[0] is module
    assert at_batch(prepared, None, "f")[:3] == (prepared, 3, 0)


def test_the_batch_dimension_comes_from_the_model_or_the_inputs() -> None:
    """Issue 40: an nn.LSTM's default input is (T, B, F); its captured [16, 8, …] input had
    swept the sequence length as "captured batch size: 16"."""
    import torch

    from tests.fixtures.workspace.gpt_samples import BatchFirstTagger, Tagger
    from torchscope.worker.batch_resize import NoBatchDimension, at_batch
    from torchscope.worker.call_expression import PreparedCall

    tagger = Tagger()
    seq = PreparedCall(tagger.forward, (torch.randn(16, 8, 8),), {}, "f(<captured inputs>)")
    at4, captured, dim, why = at_batch(seq, 4, "Tagger.forward")
    assert (captured, dim, why) == (8, 1, "lstm.batch_first=False")
    assert at4.args[0].shape == (16, 4, 8)
    assert at4.func(*at4.args).shape == (16, 4, 4)  # the model runs at the new batch

    first = PreparedCall(BatchFirstTagger().forward, (torch.randn(8, 16, 8),), {}, "f(…)")
    assert at_batch(first, 4, "BatchFirstTagger.forward")[1:3] == (8, 0)

    def step(x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        return x.sum() + h0.sum()

    # no batch_first to read: the size x and h0 share, dim 1 of (T, B, F) and (L, B, H)
    shared = PreparedCall(step, (torch.randn(16, 8, 3), torch.randn(2, 8, 5)), {}, "f(…)")
    resized, captured, dim, _ = at_batch(shared, 2, "step")
    assert (captured, dim) == (8, 1) and resized.args[1].shape == (2, 2, 5)

    tied = PreparedCall(step, (torch.randn(3, 8, 8), torch.randn(5, 8, 8)), {}, "f(…)")
    with pytest.raises(
        NoBatchDimension, match=r"dim 1 \(8\), dim 2 \(8\) fit equally.*--batch-dim N"
    ):
        at_batch(tied, 2, "step")
    assert at_batch(tied, 2, "step", asked=2)[1:4] == (8, 2, "--batch-dim")


LSTM_MODEL = """\
    import torch


    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16)  # batch_first=False: input (T, B, F)
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x):
            assert x.shape[0] == 16, "the sequence length is kept"
            out, _ = self.lstm(x)
            return self.head(out)
"""

LSTM_MAIN = """\
    import torch
    import model

    tagger = model.Tagger()
    for _ in range(2):
        tagger(torch.randn(16, 8, 8))
"""


def test_an_lstm_capture_sweeps_its_batch_not_its_sequence(tmp_path: Path, trace_dir: Path) -> None:
    _write(tmp_path, "model.py", LSTM_MODEL)
    _write(tmp_path, "main.py", LSTM_MAIN)
    run = torchscope(
        tmp_path, "run", "--target", "model.py::Tagger.forward", "--capture", "--calls", "1",
        "-q", "--trace-dir", str(trace_dir), *FAST, "--", "python", "main.py",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    sweep = torchscope(
        tmp_path, "profile", "model.py::Tagger.forward", "--sweep", "batch=2,8", "--json",
        "--trace-dir", str(trace_dir), *FAST,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    [data] = _json_lines(sweep)
    assert (data["sweep"]["captured_batch"], data["sweep"]["batch_dim"]) == (8, 1)
    assert [p["error"] for p in data["sweep"]["points"]] == [None, None], data["sweep"]
    text = torchscope(
        tmp_path, "profile", "model.py::Tagger.forward", "--sweep", "batch=2", "--batch-dim",
        "0", "--trace-dir", str(trace_dir), *FAST,
    )  # fmt: skip
    # --batch-dim 0 cuts the sequence instead: the model's own assert fails that size
    assert text.returncode == 1, text.stderr
    assert "raised AssertionError: the sequence length is kept" in text.stderr, text.stderr
